//===- CharClasses.cpp - The character classes of the splitters -----------===//
//
// The per-character tests that `tokenizers` 0.20 splits on, through ICU's
// character properties:
//   white space  Rust's char::is_whitespace: the White_Space property
//   numeric      Rust's char::is_numeric: general category N (Nd, Nl, No)
//   word         \w of Rust's regex crate (the Whitespace pre-tokenizer):
//                Alphabetic, marks, Nd, Pc, Join_Control
//   punctuation  ASCII punctuation, or general category P as the
//                unicode_categories crate has it: Unicode 8.0's. Characters
//                assigned later are not punctuation there, and two were P in
//                8.0 but are not now (U+166D, U+111C9). Checked against
//                `tokenizers` on every code point (test/Text).
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <unicode/uchar.h>

namespace lockstep::text::detail {

bool isWhiteSpaceChar(uint32_t c) { return u_isUWhiteSpace(static_cast<UChar32>(c)); }

bool isNumericChar(uint32_t c) {
  int8_t t = u_charType(static_cast<UChar32>(c));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool isWordChar(uint32_t c) {
  UChar32 u = static_cast<UChar32>(c);
  return u_hasBinaryProperty(u, UCHAR_ALPHABETIC) || u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL) ||
         (U_GET_GC_MASK(u) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool isPunctuationChar(uint32_t c) {
  if (c < 0x80)
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
  if (c == 0x166D || c == 0x111C9) // punctuation in Unicode 8.0
    return true;
  UVersionInfo age;
  u_charAge(static_cast<UChar32>(c), age);
  if (age[0] > 8 || (age[0] == 8 && age[1] > 0))
    return false;
  return (U_GET_GC_MASK(static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

} // namespace lockstep::text::detail
