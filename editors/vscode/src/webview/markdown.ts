// A small Markdown renderer for agent text: every character of the input is escaped first, so
// the output holds only the tags made here. Fences, headings, lists, quotes, paragraphs, and
// inline code, bold, italics and http(s) links.

export function escapeHtml(text: string): string {
  return text
    .replace(/&/g, "&amp;")
    .replace(/</g, "&lt;")
    .replace(/>/g, "&gt;")
    .replace(/"/g, "&quot;")
    .replace(/'/g, "&#39;");
}

function inline(text: string): string {
  const parts = text.split(/(`[^`\n]+`)/g);
  return parts
    .map((part, i) => {
      if (i % 2 === 1) return `<code>${escapeHtml(part.slice(1, -1))}</code>`;
      let html = escapeHtml(part);
      html = html.replace(
        /\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g,
        (_m, label: string, url: string) => `<a href="${url}">${label}</a>`,
      );
      html = html.replace(/\*\*([^*\n]+)\*\*/g, "<strong>$1</strong>");
      html = html.replace(/(^|[^\w*])\*([^*\n]+)\*(?!\w)/g, "$1<em>$2</em>");
      html = html.replace(/(^|[^\w])_([^_\n]+)_(?!\w)/g, "$1<em>$2</em>");
      return html;
    })
    .join("");
}

type Block =
  | { kind: "code"; lang: string; lines: string[] }
  | { kind: "heading"; level: number; text: string }
  | { kind: "list"; ordered: boolean; items: string[] }
  | { kind: "quote"; lines: string[] }
  | { kind: "para"; lines: string[] };

const LIST_ITEM = /^\s*(?:([-*+])|(\d+)[.)])\s+(.*)$/;

function blocks(source: string): Block[] {
  const out: Block[] = [];
  const lines = source.replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    const fence = /^\s*(```|~~~)\s*([\w+-]*)/.exec(line);
    if (fence) {
      const body: string[] = [];
      i++;
      while (i < lines.length && !lines[i].trim().startsWith(fence[1])) body.push(lines[i++]);
      i++; // the closing fence (or the end of a still-streaming block)
      out.push({ kind: "code", lang: fence[2], lines: body });
      continue;
    }
    const heading = /^(#{1,6})\s+(.*)$/.exec(line);
    if (heading) {
      out.push({ kind: "heading", level: heading[1].length, text: heading[2] });
      i++;
      continue;
    }
    const item = LIST_ITEM.exec(line);
    if (item) {
      const ordered = item[2] !== undefined;
      const items: string[] = [];
      while (i < lines.length) {
        const next = LIST_ITEM.exec(lines[i]);
        if (next && (next[2] !== undefined) === ordered) items.push(next[3]);
        else if (lines[i].startsWith("  ") && items.length > 0 && lines[i].trim()) {
          items[items.length - 1] += ` ${lines[i].trim()}`;
        } else break;
        i++;
      }
      out.push({ kind: "list", ordered, items });
      continue;
    }
    if (line.startsWith(">")) {
      const quoted: string[] = [];
      while (i < lines.length && lines[i].startsWith(">")) quoted.push(lines[i++].replace(/^>\s?/, ""));
      out.push({ kind: "quote", lines: quoted });
      continue;
    }
    if (!line.trim()) {
      i++;
      continue;
    }
    const para: string[] = [];
    while (i < lines.length && lines[i].trim() && !/^\s*(```|~~~|#{1,6}\s|>)/.test(lines[i])) {
      if (para.length > 0 && LIST_ITEM.test(lines[i])) break;
      para.push(lines[i++]);
    }
    out.push({ kind: "para", lines: para });
  }
  return out;
}

export function renderMarkdown(source: string): string {
  return blocks(source)
    .map((b) => {
      switch (b.kind) {
        case "code": {
          const cls = b.lang ? ` class="lang-${escapeHtml(b.lang)}"` : "";
          return `<pre><code${cls}>${escapeHtml(b.lines.join("\n"))}</code></pre>`;
        }
        case "heading":
          return `<h${b.level}>${inline(b.text)}</h${b.level}>`;
        case "list": {
          const tag = b.ordered ? "ol" : "ul";
          return `<${tag}>${b.items.map((t) => `<li>${inline(t)}</li>`).join("")}</${tag}>`;
        }
        case "quote":
          return `<blockquote>${b.lines.map(inline).join("<br>")}</blockquote>`;
        case "para":
          return `<p>${b.lines.map(inline).join("<br>")}</p>`;
      }
    })
    .join("");
}
