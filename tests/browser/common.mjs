// What the browser tests share: their options (--name value) and the
// browser parts, or a skip (exit 77) naming what is missing.
import { createRequire } from "node:module";
import fs from "node:fs";
import path from "node:path";

export function options() {
  return Object.fromEntries(process.argv.slice(2).reduce((acc, a, i, all) => {
    if (a.startsWith("--")) acc.push([a.slice(2), all[i + 1]]);
    return acc;
  }, []));
}

// Debian's chromium and puppeteer-core from DIR (scripts/setup-browser).
export function browserParts(args) {
  const chromium = args.chromium || "/usr/bin/chromium";
  if (!fs.existsSync(chromium)) { console.log("SKIPPED: no chromium at " + chromium + " (scripts/setup installs it)"); process.exit(77); }
  try { return { chromium, puppeteer: createRequire(path.resolve(args.modules) + "/")("puppeteer-core") }; }
  catch (e) { console.log("SKIPPED: puppeteer-core is not in " + args.modules + " (scripts/setup-browser): " + e.message); process.exit(77); }
}
