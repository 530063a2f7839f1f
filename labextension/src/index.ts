/**
 * JupyterLab support for Choreo: registers the `choreo` language (MIME type
 * text/x-choreo, files ending in .co) with JupyterLab's editor language registry.
 * Notebook cells of the `choreo` kernel find it through the kernel's
 * `language_info.codemirror_mode`; the file editor finds it by extension.
 */

import {
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { IEditorLanguageRegistry } from '@jupyterlab/codemirror';
import {
  LanguageSupport,
  StreamLanguage,
  indentUnit,
  syntaxHighlighting
} from '@codemirror/language';
import { Prec } from '@codemirror/state';
import { EditorView } from '@codemirror/view';
import { Tag, tagHighlighter, tags } from '@lezer/highlight';

import { TOKEN_KINDS, TokenKind, choreoParser } from './mode';

/**
 * The standard tag of each kind: JupyterLab's highlight style colours a token by
 * it, so Choreo follows the active theme like any other language.
 */
const THEME_TAGS: Record<TokenKind, Tag> = {
  keyword: tags.controlKeyword,
  storage: tags.modifier,
  type: tags.typeName,
  constant: tags.bool,
  operation: tags.standard(tags.variableName),
  level: tags.labelName,
  member: tags.propertyName,
  number: tags.number,
  string: tags.string,
  comment: tags.comment,
  meta: tags.meta,
  operator: tags.operator,
  punctuation: tags.punctuation
};

/**
 * One extra tag per kind, rendered as the stable class `cm-choreo-<kind>`, so
 * that themes, user CSS and the browser test can address Choreo tokens by kind
 * (the theme's own classes are generated names).
 */
const KIND_TAGS = Object.fromEntries(
  TOKEN_KINDS.map(kind => [kind, Tag.define()])
) as Record<TokenKind, Tag>;

const choreoLanguage = StreamLanguage.define({
  ...choreoParser,
  tokenTable: Object.fromEntries(
    TOKEN_KINDS.map(kind => [
      `choreo-${kind}`,
      [THEME_TAGS[kind], KIND_TAGS[kind]]
    ])
  )
});

const kindClasses = tagHighlighter(
  TOKEN_KINDS.map(kind => ({ tag: KIND_TAGS[kind], class: `cm-choreo-${kind}` }))
);

/** JupyterLab's highlight style leaves type names uncoloured; Choreo's element types deserve a colour. */
const choreoTheme = EditorView.baseTheme({
  '.cm-choreo-type': { color: 'var(--jp-mirror-editor-variable-2-color)' }
});

/**
 * Choreo is indented by two spaces, as every example is; a `%%python` cell keeps
 * Python's four. Above JupyterLab's own indent-unit setting, which is one number
 * for every language.
 */
const choreoIndentUnit = Prec.high(
  indentUnit.compute(['doc'], state =>
    /^\s*%%python\b/.test(state.doc.line(1).text) ? '    ' : '  '
  )
);

/** The Choreo language with its kind classes and its indentation. */
export function choreo(): LanguageSupport {
  return new LanguageSupport(choreoLanguage, [
    syntaxHighlighting(kindClasses),
    choreoTheme,
    choreoIndentUnit
  ]);
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'choreo-kernel:language',
  description:
    'Choreo syntax highlighting: the choreo language, text/x-choreo, .co files.',
  autoStart: true,
  requires: [IEditorLanguageRegistry],
  activate: (_app: JupyterFrontEnd, languages: IEditorLanguageRegistry) => {
    languages.addLanguage({
      name: 'choreo',
      displayName: 'Choreo',
      mime: 'text/x-choreo',
      extensions: ['co'],
      load: async () => choreo()
    });
  }
};

export default plugin;
