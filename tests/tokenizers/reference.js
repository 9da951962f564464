// The reference ids: the Rust tokenizers library (through its Node bindings,
// @anush008/tokenizers) encodes every text below with every tokenizer.json given, special
// tokens added, and writes them to one JSON file that tests/test_tokenizer_json.cpp compares
// against, id for id.
//   node reference.js OUT.json NAME=PATH [NAME=PATH …]
'use strict';
const fs = require('fs');
const path = require('path');
const { Tokenizer } = require(path.join(process.cwd(), 'node_modules', '@anush008', 'tokenizers'));

// Hard texts: spaces and line breaks in every arrangement, digit runs, contractions, accents,
// scripts without spaces, emoji joined by ZWJ, U+180E (a space to PCRE2, not to Oniguruma),
// special tokens written in the text, the empty string, control characters, long words.
const texts = [
  'The quick brown fox jumps over the lazy dog.',
  'Hello world',
  ' leading space',
  '   three leading spaces',
  'trailing spaces   ',
  'multiple     spaces    between words',
  'tabs\tand\nnewlines\r\nand\n\n\nblank lines\n',
  ' \n \t mixed whitespace \t\n ',
  '12345 and 3.14159 and 1,000,000 and 9876543210',
  "I'm sure you're right, don't worry; they'll see it's OK. HE'S DONE. We've I'd",
  'café naïve résumé Ångström façade',
  'e\u0301 decomposed, NFC: \u00e9',
  '日本語のテキストと中文字符，还有한국어.',
  'emoji 👩‍👩‍👧‍👦 family 👍🏽 thumbs 🇫🇷 flag',
  '\u180e',
  'x \u180e!',
  'a\u180eb \u180e c',
  '<|begin_of_text|>Hello<|end_of_text|>',
  '<s> Hello</s><unk>',
  '[CLS] hi [MASK] there [SEP][PAD]',
  '<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n',
  '<bos><start_of_turn>user\nhi<end_of_turn>',
  '',
  ' ',
  '\u00ff\u00fe\u0000\u0001\u007f bytes \ufffd',
  'Pneumonoultramicroscopicsilicovolcanoconiosis',
  'supercalifragilisticexpialidocious'.repeat(4),
  'def f(x):\n    return x**2  # comment\n',
  'HELLO World ÉCOLE ΣΊΣΥΦΟΣ İstanbul straße',
  'non\u00a0breaking\u2003em\u3000ideographic space',
  'Hello, world! (parens) [brackets] {braces} ... ?! — “quotes” «guillemets»',
  'ﬁ ligature ① circled ｆｕｌｌｗｉｄｔｈ ²',
  '\u0301 a combining mark first',
  '\ufeffbyte order mark',
  'Mongolian ᠠᠡᠢ and Thai สวัสดี and Hindi नमस्ते',
  'unaffable runner running ##ing',
  'a',
  'x   <left>   y<right>   z a<word> <word> Hello! HELLO! 2024 12345678',
  "it’s 1,2 x'y a.b?! '' ..",
  'hello<s>world</s> <mask> the<mask>fox',
];

async function main() {
  const [out, ...pairs] = process.argv.slice(2);
  const files = [];
  for (const pair of pairs) {
    const eq = pair.indexOf('=');
    const name = pair.slice(0, eq), file = pair.slice(eq + 1);
    let tokenizer;
    try {
      tokenizer = Tokenizer.fromFile(file);
    } catch (e) {
      throw new Error(`${file}: ${e && e.message ? e.message : e}`);
    }
    const cases = [];
    for (const text of texts) {
      const encoding = await tokenizer.encode(text, null, { addSpecialTokens: true });
      cases.push({ text, ids: Array.from(encoding.getIds()) });
    }
    files.push({ name, file, cases });
    console.log(`${name}: ${cases.length} texts`);
  }
  fs.writeFileSync(out, JSON.stringify({ files }, null, 1));
}

main().catch((e) => {
  console.error(e && e.stack ? e.stack : String(e));
  process.exit(1);
});
