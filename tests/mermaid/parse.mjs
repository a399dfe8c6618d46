// Mermaid's own parser, headless: reads a JSON array of diagram sources on stdin and writes a JSON array of
// {"ok": true, "type": "<diagram type>"} or {"ok": false, "error": "<the parser's message>"}, one per source.
// mermaid.parse() needs a DOM only for DOMPurify, which mermaid builds when it is imported: jsdom's window first.
import { JSDOM } from "jsdom";

const { window } = new JSDOM("<!doctype html><html><body></body></html>");
globalThis.window = window;
globalThis.document = window.document;
const { default: mermaid } = await import("mermaid");

let input = "";
for await (const chunk of process.stdin) input += chunk;
const results = [];
for (const source of JSON.parse(input)) {
  try {
    const parsed = await mermaid.parse(source);
    results.push({ ok: true, type: parsed.diagramType });
  } catch (error) {
    results.push({ ok: false, error: String(error.message ?? error) });
  }
}
process.stdout.write(JSON.stringify(results));
