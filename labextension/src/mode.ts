/**
 * The Choreo tokenizer: a CodeMirror stream parser with no JupyterLab imports, so
 * that the tests can run it under plain Node and compare it with the Pygments
 * lexer (choreo_kernel/lexer.py), which sorts the same text into the same kinds.
 *
 * Each token is named `choreo-<kind>`; index.ts maps the names to highlighting
 * tags and CSS classes. Like the Pygments lexer, it follows the terminals of
 * compiler/grammar.lark and decides the two position-dependent words by the
 * token before them: a parallel level only after `:`, `ready` only after `=`.
 */

import type { StreamParser, StringStream } from '@codemirror/language';
import { python } from '@codemirror/legacy-modes/mode/python';

/** The kinds of TOKEN_KINDS in choreo_kernel/lexer.py, in the same order. */
export const TOKEN_KINDS = [
  'keyword',
  'storage',
  'type',
  'constant',
  'operation',
  'level',
  'member',
  'number',
  'string',
  'comment',
  'meta',
  'operator',
  'punctuation'
] as const;

export type TokenKind = (typeof TOKEN_KINDS)[number];

const KEYWORDS = new Set([
  '__co__',
  '__to',
  '__asm__',
  'asm',
  'volatile',
  'after',
  'assert',
  'break',
  'by',
  'call',
  'continue',
  'else',
  'foreach',
  'if',
  'in',
  'return',
  'trigger',
  'wait',
  'where',
  'while',
  'with',
  'yield'
]);
const STORAGE = new Set(['global', 'shared', 'local', 'frag', 'mutable']);
const TYPES = new Set([
  'f64',
  'f32',
  'tf32',
  'f16',
  'bf16',
  'f8_e4m3',
  'f8_e5m2',
  'f8',
  'f6_e3m2',
  'f6_e2m3',
  'f4_e2m1',
  's64',
  'u64',
  's32',
  'u32',
  's16',
  'u16',
  's8',
  'u8',
  'u6',
  's6',
  'u4',
  's4',
  'u2',
  's2',
  'u1',
  'bin1',
  'bool',
  'int',
  'float',
  'double',
  'half',
  'bfp16',
  'void',
  'auto',
  'event',
  'mdspan',
  'ituple'
]);
const CONSTANTS = new Set(['true', 'false']);

const OPERATION =
  /^(?:(?:dma|tma|mma)(?:\.[A-Za-z_]\w*(?:<[^<>;\n]*>)?)+|sync\.[A-Za-z_]\w*)/;
const PARALLEL = /^(?:parallel|inthreads)(?:\.async)?(?![\w.])/;
const PRINT = /^(?:print|println)!?(?=\s*\()/;
const LEVEL = /^(?:block|group-\d+|group|thread|cluster)(?![\w-])/;
const DIRECTIVE =
  /^[ \t]*#[ \t]*(?:define|undef|ifdef|ifndef|if|elif|else|endif|include|pragma|error|warning|line)\b/;
const MAGIC = /^%%?[A-Za-z_][\w-]*.*/;
const FLOAT =
  /^(?:(?:(?:\d+\.\d*|\.\d+)(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+)[fF]?|\d+[fF])/;
const HEX = /^0[xX][0-9a-fA-F]+[uUlL]*/;
const INTEGER = /^\d+(?:'\d+)*[uUlL]*/;
const NAME = /^[A-Za-z_]\w*/;
const MEMBER_DOT = /^\.(?=[A-Za-z_])/;
const STRING = /^"(?:[^"\\]|\\.)*"/;
const CHARACTER = /^'(?:[^'\\]|\\.)'/;
const OPERATOR =
  /^(?:=>|<->|::|->|<<=|>>=|\+\+|--|&&|\|\||[-+*/%&|^=!<>]=|<<|>>|[-+*/%&|^~!<>=?#])/;
const PUNCTUATION = /^[()[\]{},;:.\\]/;

export interface ChoreoState {
  /** Inside a `/* ... *\/` comment that runs on past this line. */
  inComment: boolean;
  /** Inside a preprocessor line, or its continuation after a trailing backslash. */
  inDirective: boolean;
  /** The directive's line ended with a backslash: the next line continues it. */
  directiveContinues: boolean;
  /** The text of the last token that was not whitespace, for `: block` and `= ready`. */
  previous: string;
  /** The last token was a `.` right before a name: the name is a member (`.chunkat`). */
  memberNext: boolean;
  /** Nesting depth of `{`, for indentation. */
  depth: number;
  /** No token yet: a first line of `%%python` makes the whole cell Python. */
  atStart: boolean;
  /** The Python mode's state, in a `%%python` cell. */
  python: unknown | null;
}

/** A CodeMirror 5 style copy: top-level fields, arrays one level deep. */
function copyFields<T extends object>(state: T): T {
  const copy = {} as Record<string, unknown>;
  for (const [key, value] of Object.entries(state)) {
    copy[key] = Array.isArray(value) ? value.slice() : value;
  }
  return copy as T;
}

function kind(name: TokenKind): string {
  return `choreo-${name}`;
}

/** A word: the keyword sets, and the two words that depend on the token before them. */
function wordKind(word: string, previous: string): TokenKind | null {
  if (KEYWORDS.has(word)) {
    return 'keyword';
  }
  if (STORAGE.has(word)) {
    return 'storage';
  }
  if (TYPES.has(word)) {
    return 'type';
  }
  if (CONSTANTS.has(word) || (word === 'ready' && previous === '=')) {
    return 'constant';
  }
  return null;
}

function directiveToken(stream: StringStream, state: ChoreoState): string {
  if (stream.match('//')) {
    stream.skipToEnd();
    return kind('comment');
  }
  if (stream.match(/^\/\*.*?\*\//)) {
    return kind('comment');
  }
  if (stream.match(/^\\$/)) {
    state.directiveContinues = true;
    return kind('meta');
  }
  if (!stream.match(/^[^\\/]+/)) {
    stream.next();
  }
  return kind('meta');
}

function codeToken(stream: StringStream, state: ChoreoState): TokenKind | null {
  if (state.memberNext) {
    state.memberNext = false;
    stream.match(NAME);
    return 'member';
  }
  if (stream.match('//')) {
    stream.skipToEnd();
    return 'comment';
  }
  if (stream.match('/*')) {
    state.inComment = true;
    return commentRest(stream, state);
  }
  if (stream.match(STRING) || stream.match(CHARACTER)) {
    return 'string';
  }
  if (stream.match(OPERATION)) {
    return 'operation';
  }
  if (stream.match(PARALLEL) || stream.match(PRINT)) {
    return 'keyword';
  }
  if (state.previous === ':' && stream.match(LEVEL)) {
    return 'level';
  }
  if (stream.match(FLOAT) || stream.match(HEX) || stream.match(INTEGER)) {
    return 'number';
  }
  if (stream.match(MEMBER_DOT)) {
    state.memberNext = true;
    return 'punctuation';
  }
  const word = stream.match(NAME) as RegExpMatchArray | null;
  if (word) {
    return wordKind(word[0], state.previous);
  }
  if (stream.match(OPERATOR)) {
    return 'operator';
  }
  if (stream.match(PUNCTUATION)) {
    return 'punctuation';
  }
  stream.next();
  return null;
}

function commentRest(stream: StringStream, state: ChoreoState): TokenKind {
  if (stream.match(/^.*?\*\//)) {
    state.inComment = false;
  } else {
    stream.skipToEnd();
  }
  return 'comment';
}

export const choreoParser: StreamParser<ChoreoState> = {
  name: 'choreo',

  startState: () => ({
    inComment: false,
    inDirective: false,
    directiveContinues: false,
    previous: '',
    memberNext: false,
    depth: 0,
    atStart: true,
    python: null
  }),

  copyState: state => {
    const copy = copyFields(state);
    copy.python = state.python && copyFields(state.python as object);
    return copy;
  },

  token: (stream, state) => {
    if (state.python) {
      return python.token(stream, state.python);
    }
    if (stream.sol()) {
      if (state.inDirective && !state.directiveContinues) {
        state.inDirective = false;
      }
      state.directiveContinues = false;
      if (state.atStart && stream.match(/^%%python\b.*/)) {
        state.python = python.startState!(4);
        return kind('meta');
      }
      if (!state.inComment && !state.inDirective) {
        if (stream.match(MAGIC)) {
          state.atStart = false;
          return kind('meta');
        }
        if (stream.match(DIRECTIVE)) {
          state.inDirective = true;
          state.atStart = false;
          return kind('meta');
        }
      }
    }
    if (state.inComment) {
      return kind(commentRest(stream, state));
    }
    if (stream.eatSpace()) {
      return null;
    }
    state.atStart = false;
    if (state.inDirective) {
      return directiveToken(stream, state);
    }
    const found = codeToken(stream, state);
    const text = stream.current();
    state.previous = text;
    if (text === '{') {
      state.depth++;
    } else if (text === '}') {
      state.depth = Math.max(0, state.depth - 1);
    }
    return found && kind(found);
  },

  blankLine: (state, indentUnit) => {
    if (state.python) {
      python.blankLine?.(state.python, indentUnit);
    }
    state.inDirective = false; // a blank line ends a directive, even after a backslash
    state.directiveContinues = false;
  },

  indent: (state, textAfter, context) => {
    if (state.python) {
      return python.indent ? python.indent(state.python, textAfter, context) : null;
    }
    const closing = /^\s*\}/.test(textAfter) ? 1 : 0;
    return Math.max(0, state.depth - closing) * context.unit;
  },

  languageData: {
    commentTokens: { line: '//', block: { open: '/*', close: '*/' } },
    // A line that becomes `}` is re-indented as it is typed (JupyterLab's smart indentation).
    indentOnInput: /^\s*\}$/
  }
};
