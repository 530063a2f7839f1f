// Prints the tokens that the CodeMirror mode (lib/mode.js, built by `npm run build`) finds
// in the text on stdin, as JSON [[start, end, kind], ...] with offsets into the whole text
// and kind null for plain names and unknown characters. tests/test_lexer.py compares
// them with the Pygments lexer's, so that both highlighters agree.
import { readFileSync } from 'node:fs';
import { StringStream } from '@codemirror/streamparser';
import { choreoParser } from './lib/mode.js';

const INDENT_UNIT = 4;
const text = readFileSync(0, 'utf8');
const state = choreoParser.startState(INDENT_UNIT);
const tokens = [];
let offset = 0;
for (const line of text.split('\n')) {
  if (line === '') {
    choreoParser.blankLine?.(state, INDENT_UNIT);
  }
  const stream = new StringStream(line, INDENT_UNIT, INDENT_UNIT);
  while (!stream.eol()) {
    stream.start = stream.pos;
    const style = choreoParser.token(stream, state);
    if (stream.pos === stream.start) {
      throw new Error(`the mode read nothing at ${JSON.stringify(line.slice(stream.pos))}`);
    }
    const kind = style && style.startsWith('choreo-') ? style.slice('choreo-'.length) : null;
    tokens.push([offset + stream.start, offset + stream.pos, kind]);
  }
  offset += line.length + 1;
}
process.stdout.write(JSON.stringify(tokens));
