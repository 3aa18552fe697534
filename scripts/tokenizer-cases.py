#!/usr/bin/env python3
"""tokenizer-cases.py: print the tokenizer test inputs, one per line, as hex.

Each line is the hex of one input's bytes (usually UTF-8; some cases are
deliberately invalid UTF-8).  scripts/make-token-fixtures.py feeds them to
llama.cpp (llama-cpp-python) to produce tests/fixtures/tokens.txt, which
tests/test_tokenizer.c checks engine/model/tokenizer.c against.

Coverage: ASCII prose, accents, CJK, emoji (ZWJ sequences, skin tones,
flags), digits and long numbers, whitespace runs (spaces, tabs, newlines,
mixed, trailing), code (C, Python, JSON, shell), contractions in every case,
special tokens inside text (whole and partial), bytes with no token, Unicode
whitespace, combining marks, RTL text, math symbols, invalid UTF-8, and a
few seeded random mixtures.

Left out on purpose: byte sequences that decode past U+10FFFF (F4 90.. and
F5..F7 leads with continuation bytes), which make llama.cpp abort, and code
points assigned after Unicode 15.0 (our tables come from Debian 12's
unicode-data 15.0).

Deterministic (fixed seed), standard library only.
Usage: scripts/tokenizer-cases.py > cases.hex
"""

import random
import sys


def text_cases():
    """Hand-written cases, as str."""
    c = []
    # spec/model.md 7.3 examples and the chat prompt pieces
    c += [
        "", "<|im_start|>system\n", "<|im_start|>user\n", "<|im_start|>assistant\n",
        "<|im_end|>\n", "What is the capital of France?", "The capital of France is",
        " Paris.", "hello world", "Hello", "Hello! How can I help you today?",
        "You are a helpful AI assistant.",
        "You are a helpful AI assistant named SmolLM, trained by Hugging Face",
        "Explain in three short sentences why plants need sunlight.", "hi",
        "!", ",", ".", "?", "\n", "Hello world 2024!",
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by "
        "Hugging Face<|im_end|>\n<|im_start|>user\nWhat is the capital of France?"
        "<|im_end|>\n<|im_start|>assistant\n",
    ]
    # ASCII prose
    c += [
        "The quick brown fox jumps over the lazy dog.",
        "It was the best of times, it was the worst of times, it was the age of wisdom, "
        "it was the age of foolishness...",
        "Call me Ishmael. Some years ago - never mind how long precisely - having little "
        "or no money in my purse, and nothing particular to interest me on shore, I "
        "thought I would sail about a little and see the watery part of the world.",
        "a", "A", "ab", "abc", "Z", "zz", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz",
        "HELLO WORLD", "hElLo WoRlD", "Mr. Smith went to Washington, D.C., on Jan. 5th.",
        "e.g. i.e. etc. vs. a.k.a.", "U.S.A.", "state-of-the-art", "well...okay",
        "What?!?!", "Wait---what?", "(parenthetical) [bracketed] {braced} <angled>",
        "\"quoted\" 'single' `backtick`", "email@example.com", "https://example.com/path?q=1&r=2#frag",
        "C:\\Windows\\System32", "/usr/local/bin/python3", "#hashtag @mention $dollar %percent",
        "^caret &amp *star _under +plus =equals |pipe ~tilde", "!@#$%^&*()_+-=[]{};':\",./<>?",
        "--", "----------", "==========", "**bold** _italic_ ~~strike~~", "# Heading\n## Sub\n- item",
        "> quoted line\n> another", "1. first\n2. second\n3. third",
    ]
    # contractions
    c += [
        "it's", "don't", "they're", "we've", "I'm", "you'll", "he'd",
        "IT'S", "DON'T", "THEY'RE", "WE'VE", "I'M", "YOU'LL", "HE'D",
        "It'S", "Don'T", "They'Re", "We'Ve", "I'M", "You'Ll", "He'D",
        "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'x", "'",
        "''", "'''s", "rock'n'roll", "o'clock", "y'all'd've", "can't won't shouldn't",
        "'tis the season", "the dog's bone", "the dogs' bones", "James's", "'hello'",
        " 's", "' s", "'ss", "'lll", "'reve", "'d'd'd", "it’s", "don’t",
        "I'd've", "'12", "'99", "5'11\"",
    ]
    # accents and Latin-extended
    c += [
        "café", "naïve", "résumé", "Ångström", "Größe", "straße", "Ærøskøbing",
        "Łódź", "Žluťoučký kůň úpěl ďábelské ódy", "fiancée", "jalapeño", "São Paulo",
        "İstanbul", "ı i İ I", "Ελληνικά", "Привет, мир!", "Здравствуйте",
        "Ünïcödé wïth dïäcrïtïcs", "œuvre", "ﬁ ligature ﬂ", "ǅ ǈ ǋ titlecase",
        "Ｆｕｌｌｗｉｄｔｈ", "ＡＢＣ１２３", "ｶﾀｶﾅ",
    ]
    # CJK, other scripts
    c += [
        "你好，世界！", "我爱自然语言处理。", "中文字符和English混合", "日本語のテキストです。",
        "ひらがな カタカナ 漢字", "한국어 텍스트", "안녕하세요", "ไทย ภาษา", "हिन्दी पाठ",
        "বাংলা", "தமிழ்", "ქართული", "Հայերեն", "ᚠᛇᚻ᛫ᛒᛦᚦ", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢", "𠀀𠀁𠀂",
        "一二三四五六七八九十", "〇一二", "第1章", "２０２４年", "東京タワー333m",
    ]
    # RTL
    c += [
        "مرحبا بالعالم", "שלום עולם", "العربية 123 English", "עִבְרִית",
        "\u202eRTL override\u202c", "\u200fRLM\u200e LRM", "فارسی ۱۲۳۴", "٠١٢٣٤٥٦٧٨٩",
    ]
    # emoji
    c += [
        "😀", "😀😃😄", "I love 🍕!", "👍", "👍🏽", "👍🏿👍🏻", "👨‍👩‍👧‍👦", "👩🏽‍💻",
        "🏳️‍🌈", "🇫🇷🇺🇸", "🇯🇵", "❤️", "❤", "☺️", "✨🎉🎊", "🙂 🙃", "🤖 robot",
        "#️⃣ 1️⃣ *️⃣", "🧑‍🤝‍🧑", "🐈‍⬛", "😀a😀", " 😀", "😀 ", "emoji😀inside",
    ]
    # digits and numbers
    c += [
        "0", "1", "12", "123", "1234", "12345", "1234567890", "3.14159", "2.718281828459045",
        "1,000,000", "1 000 000", "-42", "+1", "1e10", "6.02e23", "0x1F", "0b1010",
        "99.9%", "$100", "€50", "£3.50", "¥1000", "10:30 AM", "2024-01-15",
        "12/25/2023", "v1.2.3", "192.168.0.1", "555-1234", "(555) 123-4567",
        "123abc", "abc123", "a1b2c3", "1st 2nd 3rd 4th", "007", "000000",
        "31415926535897932384626433832795028841971693993751058209749445923078164062862",
        "½ ¼ ¾", "² ³ ¹", "Ⅰ Ⅱ Ⅲ Ⅳ", "①②③", "٣ ۳ ३ ৩", "x²+y²=z²", " 5", "  5", "a 5",
    ]
    # whitespace
    c += [
        " ", "  ", "   ", "    ", "        ", "\t", "\t\t", "\n\n", "\n\n\n", "\r\n",
        "\r", "\r\n\r\n", " \n", "\n ", " \t \n ", "a  b", "a   b", "a    b", "a\tb",
        "a\t\tb", "a\nb", "a\n\nb", "a \nb", "a\n b", "a \n b", "trailing ", "trailing  ",
        "trailing\n", "trailing\n\n", " leading", "  leading", "\tleading", "\nleading",
        "a \t b", "x\u000by\u000cz", "mixed \t\n\r\n  end  ", "line1\nline2\nline3\n",
        "para one.\n\npara two.\n\n\npara three.", " " * 40, "\n" * 20, "\t" * 10,
        " a" * 10, "a " * 10, "  hello  world  ", "hello   \n\n   world",
        "a\u00a0b", "\u00a0", "a\u3000b", "\u3000", "a\u2028b", "a\u2029b", "a\u0085b",
        "a\u2003b\u2009c", "a\u202fb\u205fc", "a\u1680b", " \u00a0 ", "\u00a0\u00a0x",
        "a\u200bb", "a\ufeffb", "\ufeffBOM at start", "tab\tseparated\tvalues\n1\t2\t3",
        "  !", " !", "  a", " \ta", "\t a", "a  !", "a \u00a0b", "  \u00a0",
    ]
    # code
    c += [
        "#include <stdio.h>\n\nint main(void)\n{\n\tprintf(\"hello, world\\n\");\n\treturn 0;\n}\n",
        "for (int i = 0; i < n; i++) {\n    sum += a[i] * b[i];\n}",
        "static inline uint32_t rotl(uint32_t x, int k) { return (x << k) | (x >> (32 - k)); }",
        "if (p == NULL || *p != '\\0') return -1;",
        "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n",
        "import numpy as np\nx = np.arange(10)\nprint(x[::2])",
        "class Foo(Bar):\n    def __init__(self, *args, **kwargs):\n        super().__init__(*args)\n",
        "lambda x: x**2 if x > 0 else -x",
        "{\"name\": \"kvsnap\", \"version\": 1, \"tags\": [\"a\", \"b\"], \"ok\": true, \"n\": null}",
        "{\n  \"key\": \"value\",\n  \"nested\": {\"a\": [1, 2, 3]}\n}",
        "SELECT id, name FROM users WHERE age >= 18 ORDER BY name;",
        "<html><body><p class=\"x\">Hi &amp; bye</p></body></html>",
        "$ ls -la | grep '\\.c$' && make -j2 2>&1 | tee log.txt",
        "fn main() { let v: Vec<i32> = (0..10).collect(); println!(\"{:?}\", v); }",
        "const f = async (x) => { await g(x); return x ?? 0; };",
        "x += 1; y -= 2; z *= 3; w /= 4; v %= 5; u <<= 1; t >>= 2;",
        "a->b.c[d]::e", "!==", "===", "<=>", "::", "...", "..", "//", "/*", "*/", "#!/bin/sh",
        "    indented with four spaces", "\tindented with a tab", "        deep\n            deeper",
        "__init__", "__name__ == \"__main__\"", "camelCaseName snake_case_name SCREAMING_CASE",
        "foo.bar().baz[0]", "0xDEADBEEF", "#define MAX(a, b) ((a) > (b) ? (a) : (b))",
    ]
    # special tokens inside text
    c += [
        "<|im_start|>", "<|im_end|>", "<|endoftext|>", "<|im_start|><|im_end|>",
        "text<|im_end|>more", "<|endoftext|><|endoftext|>", "a<|im_start|>b<|im_end|>c",
        "<|im_sta", "<|im_start", "<|im_start|", "|im_start|>", "<|im_end", "im_end|>",
        "<|endoftext", "<||>", "<|>", "<|im_start|>user\nhi<|im_end|>",
        "<<|im_start|>>", "<|im_start|im_end|>", "<|IM_START|>", "< |im_start| >",
        "<repo_name>", "<reponame>", "<file_sep>", "<filename>", "<gh_stars>",
        "<issue_start>", "<issue_comment>", "<issue_closed>", "<jupyter_start>",
        "<jupyter_text>", "<jupyter_code>", "<jupyter_output>", "<jupyter_script>",
        "<empty_output>", "<jupyter_start><jupyter_code>print(1)<jupyter_output>1",
        " <|im_start|> ", "\n<|im_end|>\n", "<|im_end|> trailing", "x <|endoftext|> y",
        "<|im_start|>system\n<|im_end|>", "<s>", "</s>", "<unk>", "<pad>",
        "<|im_start|><|im_start|><|im_start|>", "<|im_start|>12345<|im_end|>",
    ]
    # Unicode odds and ends
    c += [
        "e\u0301", "a\u0300\u0301\u0302", "\u0301", "\u0301\u0302 leading marks",
        "n\u0303o\u0308", "Z\u0351\u0358\u0347a\u0344\u0336l\u0322g\u0360o\u0327",
        "∀x ∈ ℝ: x² ≥ 0", "∑_{i=1}^{n} i = n(n+1)/2", "∫₀^∞ e^{-x} dx = 1", "√2 ≈ 1.414",
        "α β γ δ ε ζ η θ", "∞ ≠ ≤ ≥ ± × ÷", "→ ← ↑ ↓ ↔ ⇒ ⇔", "∧ ∨ ¬ ⊕ ⊗", "ℵ₀ ℶ₁",
        "°C °F", "©®™", "§¶†‡•", "…", "—", "–", "«guillemets»", "„Anführungszeichen“",
        "「かぎかっこ」", "【】", "♠♣♥♦", "★☆", "♪♫", "☃", "⌘⌥⇧", "\u00ad soft\u00adhyphen",
        "\u2060word\u2060joiner", "\u034f", "\ufffd", "a\ufffdb", "\U0001F600\U0001F64F",
        "\U0010FFFF", "\uE000 private use", "\U000F0000", "\u0378 unassigned", "\uFFFE\uFFFF",
        "\u00b5 micro \u03bc mu", "\u2126 ohm \u03a9 omega", "\u212b angstrom",
        "\u0000", "a\u0000b", "\u0001\u0002\u0003", "\u001b[31mred\u001b[0m", "\u007f",
        "\u0080\u0081\u009f", "\u00a1\u00ac\u00ae\u00ff", "\u0100\u0120\u0143", "ĠĊĉ",
    ]
    return c


def byte_cases():
    """Cases that are raw bytes (invalid UTF-8, lone bytes, odd encodings)."""
    c = []
    for b in range(256):
        c.append(bytes([b]))
    c += [
        b"a" + bytes([b]) + b"b" for b in (0x04, 0x06, 0x13, 0x14, 0x16, 0x1d, 0x7f, 0x80, 0xad, 0xff)
    ]
    c += [
        b"\xc3", b"\xc3(", b"\xe2\x82", b"\xe2\x82(", b"\xe2(\xa1", b"\xf0\x9f\x98",
        b"\xf0\x9f", b"\xf0\x9f\x98 ", b"\x80\x80\x80", b"\xbf", b"\xc0\x80", b"\xc1\xbf",
        b"\xe0\x80\x80", b"\xf0\x80\x80\x80", b"\xed\xa0\x80", b"\xed\xbf\xbf",
        b"\xf4\x8f\xbf\xbf", b"\xf8\x88\x80\x80\x80", b"\xfc\x84\x80\x80\x80\x80",
        b"\xfe", b"\xff\xfe", b"\xfe\xff", b"hello\xffworld", b"caf\xe9", b"na\xefve",
        b"\xe4\xbd\xa0\xe5\xa5", b"abc\xe2", b"\xe2abc", b"<|im_end|>\xe2\x82",
        b"\xe2<|im_end|>\x82\xac", b"12\xff34", b"  \xff  ", b"\xc3\xa9\xc3",
        b"\xf0\x9f\x98\x80\xf0\x9f\x98", b"\x00\x00\x00", b"a\x00b\x00c",
    ]
    return c


def random_cases(n=40, seed=20240611):
    """Seeded mixtures of pieces from the categories above."""
    rng = random.Random(seed)
    alphabet = [
        "a", "b", "Z", " ", "  ", "\n", "\t", "1", "23", "'s", "'", "é", "ß", "你", "好",
        "😀", "👍🏽", "\u00a0", "\u3000", ".", ",", "!", "?", "-", "_", "(", ")", "<|im_end|>",
        "<|im_sta", "\u0301", "∑", "α", "ا", "ש", "0", "9", "\r\n", "::", "\"", "#",
    ]
    out = []
    for _ in range(n):
        k = rng.randint(1, 40)
        out.append("".join(rng.choice(alphabet) for _ in range(k)))
    words = ["the", "model", "token", "cache", "snapshot", "kv", "GPU", "don't", "it's",
             "2024", "3.5", "naïve", "東京", "🙂"]
    for _ in range(10):
        k = rng.randint(5, 60)
        sep = rng.choice([" ", "  ", "\n", " \n", "\t"])
        out.append(sep.join(rng.choice(words) for _ in range(k)))
    return out


def main():
    lines = [s.encode("utf-8").hex() for s in text_cases()]
    lines += [b.hex() for b in byte_cases()]
    lines += [s.encode("utf-8").hex() for s in random_cases()]
    seen = set()
    out = sys.stdout
    for h in lines:
        if h in seen:
            continue
        seen.add(h)
        out.write(h + "\n")


if __name__ == "__main__":
    main()
