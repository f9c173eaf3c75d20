// Bundles the extension (CommonJS for VS Code's extension host, `vscode` left external) and the
// webview (one browser script), and copies the webview's stylesheet. `--watch` rebuilds on change.
import { copyFile, mkdir } from "node:fs/promises";
import * as esbuild from "esbuild";

const watch = process.argv.includes("--watch");
const common = { bundle: true, sourcemap: true, logLevel: "warning", legalComments: "none" };

const builds = [
  {
    ...common,
    entryPoints: ["src/extension.ts"],
    outfile: "out/extension.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
    // zod probes `navigator` (for Cloudflare); in VS Code's extension host (Node >= 21) reading
    // it logs a PendingMigrationError against the extension. There is no navigator in Node here.
    define: { navigator: "undefined" },
  },
  {
    ...common,
    entryPoints: ["src/webview/main.ts"],
    outfile: "out/webview.js",
    platform: "browser",
    format: "iife",
    target: "chrome120",
  },
  {
    // for the node tests only (see .vscodeignore)
    ...common,
    entryPoints: ["src/testing.ts"],
    outfile: "out/testing.js",
    platform: "node",
    format: "cjs",
    target: "node20",
    external: ["vscode"],
  },
];

await mkdir("out", { recursive: true });
await copyFile("src/webview/style.css", "out/webview.css");
if (watch) {
  for (const options of builds) await (await esbuild.context(options)).watch();
} else {
  await Promise.all(builds.map((options) => esbuild.build(options)));
}
