#!/usr/bin/env python3
# Prints src/agent/letter_folds.inc: code points a model reads as a Latin
# letter, each with that letter (lower case), for agent/frames.cc. Made
# from Unicode's compatibility decompositions (NFKD: accents, ligature-free
# letter forms, letterlike symbols) and a hand list of look-alikes NFKD
# does not relate (Cyrillic, Greek, small capitals). Ranges with a rule of
# their own (full-width, mathematical, enclosed letters) are in frames.cc.
import unicodedata

RANGES = [(0x00C0, 0x024F), (0x0250, 0x02AF), (0x1E00, 0x1EFF), (0x2100, 0x214F)]
LOOKALIKES = {
    # Cyrillic
    0x0430: 'a', 0x0410: 'a', 0x0412: 'b', 0x0432: 'b', 0x0435: 'e', 0x0415: 'e', 0x0451: 'e', 0x0401: 'e',
    0x043E: 'o', 0x041E: 'o', 0x0440: 'p', 0x0420: 'p', 0x0441: 'c', 0x0421: 'c', 0x0443: 'y', 0x0423: 'y',
    0x0445: 'x', 0x0425: 'x', 0x0455: 's', 0x0405: 's', 0x0456: 'i', 0x0406: 'i', 0x0457: 'i', 0x0407: 'i',
    0x0458: 'j', 0x0408: 'j', 0x0501: 'd', 0x051B: 'q', 0x051D: 'w', 0x04BB: 'h', 0x04CF: 'l', 0x04C0: 'l',
    0x041A: 'k', 0x043A: 'k', 0x041C: 'm', 0x043C: 'm', 0x041D: 'h', 0x043D: 'h', 0x0422: 't', 0x0442: 't',
    0x0433: 'r', 0x0438: 'u', 0x043F: 'n', 0x0457: 'i', 0x0491: 'r', 0x04AF: 'y', 0x04AE: 'y',
    # Greek
    0x03B1: 'a', 0x0391: 'a', 0x0392: 'b', 0x03B2: 'b', 0x03B5: 'e', 0x0395: 'e', 0x0396: 'z', 0x0397: 'h',
    0x03B7: 'n', 0x03B9: 'i', 0x0399: 'i', 0x03BA: 'k', 0x039A: 'k', 0x039C: 'm', 0x039D: 'n', 0x03BD: 'v',
    0x03BF: 'o', 0x039F: 'o', 0x03C1: 'p', 0x03A1: 'p', 0x03C4: 't', 0x03A4: 't', 0x03C5: 'u', 0x03A5: 'y',
    0x03C7: 'x', 0x03A7: 'x', 0x03C9: 'w', 0x03F2: 'c', 0x03F9: 'c', 0x037F: 'j', 0x03F3: 'j',
    # Small capitals and other letter forms
    0x1D00: 'a', 0x0299: 'b', 0x1D04: 'c', 0x1D05: 'd', 0x1D07: 'e', 0x0493: 'f', 0x0262: 'g', 0x029C: 'h',
    0x026A: 'i', 0x1D0A: 'j', 0x1D0B: 'k', 0x029F: 'l', 0x1D0D: 'm', 0x0274: 'n', 0x1D0F: 'o', 0x1D18: 'p',
    0x0280: 'r', 0xA731: 's', 0x1D1B: 't', 0x1D1C: 'u', 0x1D20: 'v', 0x1D21: 'w', 0x028F: 'y', 0x1D22: 'z',
    0x0251: 'a', 0x0261: 'g', 0x0131: 'i', 0x0237: 'j', 0x0269: 'i', 0x028B: 'u',
}
folds = {}
for lo, hi in RANGES:
    for cp in range(lo, hi + 1):
        d = unicodedata.normalize('NFKD', chr(cp))
        letters = [c for c in d if c.isascii() and c.isalpha()]
        rest = [c for c in d if not (c.isascii() and c.isalpha()) and unicodedata.category(c) != 'Mn']
        if len(letters) == 1 and not rest:
            folds[cp] = letters[0].lower()
folds.update(LOOKALIKES)
items = sorted(folds.items())
print('// Made by scripts/gen-letter-folds.py; do not edit.')
line = ''
for cp, ch in items:
    entry = "{0x%04X, '%s'}, " % (cp, ch)
    if len(line) + len(entry) > 110:
        print(line.rstrip())
        line = ''
    line += entry
print(line.rstrip())
