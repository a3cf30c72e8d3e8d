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
// ICU is the one loaded at run time (Icu.h): the pre-tokenizers that call
// these check that it is there when they are loaded; without it (which that
// check rules out) no character is in any class.
//
//===----------------------------------------------------------------------===//
#include "Icu.h"
#include "TextInternal.h"

namespace lockstep::text::detail {

namespace {
const IcuFunctions *lib() {
  static const IcuFunctions *f = icu();
  return f;
}
} // namespace

bool isWhiteSpaceChar(uint32_t c) {
  const IcuFunctions *f = lib();
  return f && f->u_isUWhiteSpace(static_cast<UChar32>(c));
}

bool isNumericChar(uint32_t c) {
  const IcuFunctions *f = lib();
  if (!f)
    return false;
  int8_t t = f->u_charType(static_cast<UChar32>(c));
  return t == U_DECIMAL_DIGIT_NUMBER || t == U_LETTER_NUMBER || t == U_OTHER_NUMBER;
}

bool isWordChar(uint32_t c) {
  const IcuFunctions *f = lib();
  if (!f)
    return false;
  UChar32 u = static_cast<UChar32>(c);
  return f->u_hasBinaryProperty(u, UCHAR_ALPHABETIC) ||
         f->u_hasBinaryProperty(u, UCHAR_JOIN_CONTROL) ||
         (generalCategoryMask(*f, u) & (U_GC_M_MASK | U_GC_ND_MASK | U_GC_PC_MASK)) != 0;
}

bool isPunctuationChar(uint32_t c) {
  if (c < 0x80)
    return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') ||
           (c >= '{' && c <= '~');
  if (c == 0x166D || c == 0x111C9) // punctuation in Unicode 8.0
    return true;
  const IcuFunctions *f = lib();
  if (!f)
    return false;
  UVersionInfo age;
  f->u_charAge(static_cast<UChar32>(c), age);
  if (age[0] > 8 || (age[0] == 8 && age[1] > 0))
    return false;
  return (generalCategoryMask(*f, static_cast<UChar32>(c)) & U_GC_P_MASK) != 0;
}

} // namespace lockstep::text::detail
