// Writes ../choreo_kernel/labextension/sources.sha256 after a build: the SHA-256 of every file
// the build is made from, in `sha256sum` format. The build is committed, so that installing
// needs no Node.js; tests/test_labextension.py recomputes the list to check that the committed
// build was made from the sources as they are.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

const SOURCES = ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'style'];

function files(path) {
  try {
    return readdirSync(path, { withFileTypes: true })
      .flatMap(entry => files(join(path, entry.name)));
  } catch {
    return [path]; // not a directory
  }
}

const lines = SOURCES.flatMap(files)
  .sort()
  .map(path => `${createHash('sha256').update(readFileSync(path)).digest('hex')}  ${path}`);
writeFileSync('../choreo_kernel/labextension/sources.sha256', lines.join('\n') + '\n');
