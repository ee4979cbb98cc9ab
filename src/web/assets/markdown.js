// A small markdown renderer that builds DOM nodes and never parses HTML: every piece of
// text becomes a text node, so raw HTML in a document shows as the characters it is made
// of. Links are kept only for http(s) URLs (opened in a new tab, without a referrer);
// images are shown as their alt text (nothing is fetched from elsewhere).
"use strict";
(function () {
  function el(tag, cls) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    return e;
  }

  function safeUrl(url) {
    try {
      const u = new URL(url);
      return u.protocol === "http:" || u.protocol === "https:" ? u.href : null;
    } catch (_) {
      return null;
    }
  }

  // Inline markup: `code`, **strong**, *em* / _em_, [text](url), ![alt](src).
  function inline(text, parent) {
    let i = 0;
    let plain = "";
    const flush = () => {
      if (plain) parent.appendChild(document.createTextNode(plain));
      plain = "";
    };
    while (i < text.length) {
      const c = text[i];
      if (c === "\\" && i + 1 < text.length && /[\\`*_\[\]()#!>-]/.test(text[i + 1])) {
        plain += text[i + 1];
        i += 2;
        continue;
      }
      if (c === "`") {
        const end = text.indexOf("`", i + 1);
        if (end > i) {
          flush();
          const code = el("code");
          code.textContent = text.slice(i + 1, end);
          parent.appendChild(code);
          i = end + 1;
          continue;
        }
      }
      if ((c === "*" || c === "_") && text[i + 1] === c) {
        const end = text.indexOf(c + c, i + 2);
        if (end > i + 2) {
          flush();
          const s = el("strong");
          inline(text.slice(i + 2, end), s);
          parent.appendChild(s);
          i = end + 2;
          continue;
        }
      }
      if ((c === "*" || c === "_") && text[i + 1] && text[i + 1] !== " ") {
        const end = text.indexOf(c, i + 1);
        if (end > i + 1) {
          flush();
          const s = el("em");
          inline(text.slice(i + 1, end), s);
          parent.appendChild(s);
          i = end + 1;
          continue;
        }
      }
      const image = c === "!" && text[i + 1] === "[";
      if (c === "[" || image) {
        const open = image ? i + 1 : i;
        const close = text.indexOf("](", open);
        const end = close > 0 ? text.indexOf(")", close + 2) : -1;
        if (close > open && end > close) {
          const label = text.slice(open + 1, close);
          const url = text.slice(close + 2, end).trim().split(/\s+/)[0];
          flush();
          if (image) {
            const s = el("span", "md-image");
            s.textContent = "[image: " + label + "]";
            parent.appendChild(s);
          } else {
            const href = safeUrl(url);
            if (href) {
              const a = el("a");
              a.href = href;
              a.target = "_blank";
              a.rel = "noopener noreferrer nofollow";
              inline(label, a);
              parent.appendChild(a);
            } else {
              parent.appendChild(document.createTextNode(text.slice(i, end + 1)));
            }
          }
          i = end + 1;
          continue;
        }
      }
      plain += c;
      i++;
    }
    flush();
  }

  function render(source) {
    const root = document.createDocumentFragment();
    const lines = String(source).replace(/\r\n?/g, "\n").split("\n");
    let i = 0;
    let para = [];
    const endPara = () => {
      if (para.length) {
        const p = el("p");
        inline(para.join(" "), p);
        root.appendChild(p);
        para = [];
      }
    };
    while (i < lines.length) {
      const line = lines[i];
      const fence = /^\s{0,3}(```|~~~)/.exec(line);
      if (fence) {
        endPara();
        const body = [];
        i++;
        while (i < lines.length && !lines[i].trimStart().startsWith(fence[1])) {
          body.push(lines[i]);
          i++;
        }
        i++;
        const pre = el("pre");
        const code = el("code");
        code.textContent = body.join("\n");
        pre.appendChild(code);
        root.appendChild(pre);
        continue;
      }
      if (/^\s*$/.test(line)) {
        endPara();
        i++;
        continue;
      }
      const h = /^(#{1,6})\s+(.*?)\s*#*\s*$/.exec(line);
      if (h) {
        endPara();
        const e = el("h" + Math.min(6, h[1].length + 2));
        inline(h[2], e);
        root.appendChild(e);
        i++;
        continue;
      }
      if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) {
        endPara();
        root.appendChild(el("hr"));
        i++;
        continue;
      }
      if (/^\s{0,3}>/.test(line)) {
        endPara();
        const quoted = [];
        while (i < lines.length && /^\s{0,3}>/.test(lines[i])) {
          quoted.push(lines[i].replace(/^\s{0,3}>\s?/, ""));
          i++;
        }
        const q = el("blockquote");
        q.appendChild(render(quoted.join("\n")));
        root.appendChild(q);
        continue;
      }
      const item = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(line);
      if (item) {
        endPara();
        const ordered = /\d/.test(item[1][0]);
        const list = el(ordered ? "ol" : "ul");
        while (i < lines.length) {
          const m = /^\s{0,3}([-*+]|\d{1,9}[.)])\s+(.*)$/.exec(lines[i]);
          if (!m || /\d/.test(m[1][0]) !== ordered) break;
          const li = el("li");
          const task = /^\[([ xX])\]\s+(.*)$/.exec(m[2]);
          if (task) {
            const box = el("span", "md-check");
            box.textContent = task[1] === " " ? "☐ " : "☑ ";
            li.appendChild(box);
            inline(task[2], li);
          } else {
            inline(m[2], li);
          }
          i++;
          // Continuation lines (indented) belong to the item.
          while (i < lines.length && /^\s{2,}\S/.test(lines[i]) && !/^\s{0,3}([-*+]|\d{1,9}[.)])\s+/.test(lines[i])) {
            li.appendChild(document.createTextNode(" "));
            inline(lines[i].trim(), li);
            i++;
          }
          list.appendChild(li);
        }
        root.appendChild(list);
        continue;
      }
      para.push(line.trim());
      i++;
    }
    endPara();
    return root;
  }

  window.TavernMarkdown = { render: render };
})();
