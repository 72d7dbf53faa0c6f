#!/usr/bin/env node
// Tokenize files with a TextMate grammar as VS Code does (vscode-textmate + vscode-oniguruma),
// for tests/test_editors_grammar.py:
//   node tokenize.js GRAMMAR FILE...   prints {"FILE": [[start, end, [scope, ...]], ...], ...}
//   node tokenize.js --check           prints the two packages' versions (exit 3 when missing)
// Offsets count code points from the start of the file, as Python's do. The npm packages are
// found next to this script (editors/node_modules) or through NODE_PATH.
"use strict";
const fs = require("fs");
const path = require("path");

function load(name) {
  try {
    return require(name);
  } catch (e) {
    process.stderr.write(`tokenize.js: the npm package ${name} is not installed ` +
      `(npm install --prefix DIR vscode-textmate vscode-oniguruma, then NODE_PATH=DIR/node_modules)\n`);
    process.exit(3);
  }
}

const vsctm = load("vscode-textmate");
const onig = load("vscode-oniguruma");

function version(name) {
  const main = require.resolve(name);
  let dir = path.dirname(main);
  while (!fs.existsSync(path.join(dir, "package.json"))) dir = path.dirname(dir);
  return JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")).version;
}

async function main(args) {
  if (args[0] === "--check") {
    console.log(JSON.stringify({"vscode-textmate": version("vscode-textmate"),
                                "vscode-oniguruma": version("vscode-oniguruma")}));
    return;
  }
  const [grammarPath, ...files] = args;
  const wasm = fs.readFileSync(path.join(path.dirname(require.resolve("vscode-oniguruma")), "onig.wasm"));
  await onig.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (patterns) => new onig.OnigScanner(patterns),
      createOnigString: (s) => new onig.OnigString(s),
    }),
    loadGrammar: async () => vsctm.parseRawGrammar(fs.readFileSync(grammarPath, "utf8"), grammarPath),
  });
  const grammar = await registry.loadGrammar(JSON.parse(fs.readFileSync(grammarPath, "utf8")).scopeName);
  const out = {};
  for (const file of files) {
    const tokens = [];
    let base = 0;                    // code points before this line
    let stack = vsctm.INITIAL;
    for (const line of fs.readFileSync(file, "utf8").split("\n")) {
      // vscode-textmate's indices are UTF-16 units; Python's are code points
      const cp = new Array(line.length + 1);
      let n = 0;
      for (let i = 0; i < line.length; i++) {
        cp[i] = n;
        const c = line.charCodeAt(i);
        if (c < 0xd800 || c > 0xdbff) n++;
      }
      cp[line.length] = n;
      const r = grammar.tokenizeLine(line, stack);
      for (const t of r.tokens) {
        const end = Math.min(t.endIndex, line.length);
        if (end > t.startIndex) tokens.push([base + cp[t.startIndex], base + cp[end], t.scopes]);
      }
      stack = r.ruleStack;
      base += n + 1;
    }
    out[file] = tokens;
  }
  process.stdout.write(JSON.stringify(out));
}

main(process.argv.slice(2)).catch((e) => {
  process.stderr.write(`tokenize.js: ${e && e.stack || e}\n`);
  process.exit(1);
});
