// Template placeholders, following TemplatePattern in Sources/TuisongCore/TemplateStore.swift:
// `{n}` takes argument n (from 0); a placeholder without an argument stays as written;
// `{{` and `}}` are literal braces; any other brace is literal.

/** Splits a pattern into text and placeholder parts. */
export function parts(pattern) {
  const result = [];
  let text = '';
  let i = 0;
  while (i < pattern.length) {
    const c = pattern[i];
    if ((c === '{' || c === '}') && pattern[i + 1] === c) {
      text += c;
      i += 2;
      continue;
    }
    if (c === '{') {
      let j = i + 1;
      while (j < pattern.length && pattern[j] >= '0' && pattern[j] <= '9') j += 1;
      const digits = j - (i + 1);
      if (digits > 0 && digits <= 4 && pattern[j] === '}') {
        if (text) result.push({ text });
        text = '';
        result.push({ index: Number(pattern.slice(i + 1, j)), written: pattern.slice(i, j + 1) });
        i = j + 1;
        continue;
      }
    }
    text += c;
    i += 1;
  }
  if (text) result.push({ text });
  return result;
}

export function render(pattern, args) {
  return parts(pattern)
    .map((part) => ('text' in part ? part.text : (part.index < args.length ? args[part.index] : part.written)))
    .join('');
}

/** The highest placeholder index plus one. */
export function argumentCount(...patterns) {
  let count = 0;
  for (const pattern of patterns) {
    for (const part of parts(pattern)) {
      if ('index' in part) count = Math.max(count, part.index + 1);
    }
  }
  return count;
}
