//===- UnicodeForms.cpp - NFC, NFD, NFKC, NFKD through ICU ----------------===//
//
// The Lowercase normalizer, and the Unicode normalization forms of the
// NFC/NFD/NFKC/NFKD normalizers, from
// ICU's tables (libicu). `tokenizers` 0.20 normalizes with Unicode 9.0's
// tables: a mark assigned later has no combining class there, so it is not
// reordered. ICU's normalizer is therefore filtered to the characters of
// Unicode 9.0 ([:age=9.0:]); the others pass through unchanged as starters,
// as `tokenizers` treats them. Checked on every code point after marks of
// each combining class (test/Text compares with `tokenizers` directly).
// ICU is the one loaded at run time (Icu.h); the normalizers that call
// these check that it is there when they are loaded.
//
//===----------------------------------------------------------------------===//
#include "Icu.h"
#include "TextInternal.h"

namespace lockstep::text::detail {

namespace {

/// The characters of Unicode 9.0; null if ICU cannot make the set.
const USet *unicode9(const IcuFunctions &f) {
  static const USet *set = [&] {
    UErrorCode status = U_ZERO_ERROR;
    static const UChar pattern[] = u"[:age=9.0:]";
    USet *s = f.uset_openPattern(pattern, -1, &status);
    if (U_FAILURE(status))
      return static_cast<USet *>(nullptr);
    f.uset_freeze(s);
    return s;
  }();
  return set;
}

/// The normalizer that `get` returns, filtered to Unicode 9.0; null when
/// ICU fails.
const UNormalizer2 *filtered(const IcuFunctions &f, decltype(&::unorm2_getNFCInstance) get) {
  UErrorCode status = U_ZERO_ERROR;
  const UNormalizer2 *base = get(&status);
  if (U_FAILURE(status) || !unicode9(f))
    return nullptr;
  UNormalizer2 *n = f.unorm2_openFiltered(base, unicode9(f), &status);
  return U_FAILURE(status) ? nullptr : n;
}

} // namespace

bool unicodeNormalize(UnicodeForm form, std::string &s) {
  UErrorCode status = U_ZERO_ERROR;
  static const IcuFunctions *f = icu();
  if (!f)
    return false;
  static const UNormalizer2 *nfc = filtered(*f, f->unorm2_getNFCInstance);
  static const UNormalizer2 *nfd = filtered(*f, f->unorm2_getNFDInstance);
  static const UNormalizer2 *nfkc = filtered(*f, f->unorm2_getNFKCInstance);
  static const UNormalizer2 *nfkd = filtered(*f, f->unorm2_getNFKDInstance);
  const UNormalizer2 *n = form == UnicodeForm::NFC    ? nfc
                          : form == UnicodeForm::NFD  ? nfd
                          : form == UnicodeForm::NFKC ? nfkc
                                                      : nfkd;
  if (!n || s.size() > INT32_MAX / 4)
    return false;
  // UTF-8 -> UTF-16, normalize, back.
  std::u16string wide(s.size() + 1, u'\0');
  int32_t wideLen = 0;
  f->u_strFromUTF8(reinterpret_cast<UChar *>(wide.data()), static_cast<int32_t>(wide.size()),
                &wideLen, s.data(), static_cast<int32_t>(s.size()), &status);
  if (U_FAILURE(status))
    return false;
  // NFKD can grow a character 18-fold; ask ICU for the size when short.
  std::u16string out(static_cast<size_t>(wideLen) * 4 + 16, u'\0');
  int32_t outLen = f->unorm2_normalize(n, reinterpret_cast<const UChar *>(wide.data()), wideLen,
                                    reinterpret_cast<UChar *>(out.data()),
                                    static_cast<int32_t>(out.size()), &status);
  if (status == U_BUFFER_OVERFLOW_ERROR) {
    status = U_ZERO_ERROR;
    out.assign(static_cast<size_t>(outLen) + 1, u'\0');
    outLen = f->unorm2_normalize(n, reinterpret_cast<const UChar *>(wide.data()), wideLen,
                              reinterpret_cast<UChar *>(out.data()),
                              static_cast<int32_t>(out.size()), &status);
  }
  if (U_FAILURE(status))
    return false;
  std::string back(static_cast<size_t>(outLen) * 3 + 1, '\0');
  int32_t backLen = 0;
  f->u_strToUTF8(back.data(), static_cast<int32_t>(back.size()), &backLen,
              reinterpret_cast<const UChar *>(out.data()), outLen, &status);
  if (U_FAILURE(status))
    return false;
  back.resize(static_cast<size_t>(backLen));
  s = std::move(back);
  return true;
}

/// Rust's char::to_lowercase on each character: ICU's full lowercase mapping
/// of the character alone (so no context: a final sigma stays σ). Without
/// ICU (which the normalizer's loading rules out) only ASCII is lowercased.
void unicodeLowercase(std::string &s) {
  static const IcuFunctions *f = icu();
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); i += utf8CharLen(s, i)) {
    uint32_t c = utf8Decode(s, i);
    if (c < 0x80) {
      out += static_cast<char>(c >= 'A' && c <= 'Z' ? c + 32 : c);
      continue;
    }
    UChar src[2], dst[8];
    int32_t srcLen = 0;
    U16_APPEND_UNSAFE(src, srcLen, static_cast<UChar32>(c));
    UErrorCode status = U_ZERO_ERROR;
    int32_t n = f ? f->u_strToLower(dst, 8, src, srcLen, "", &status) : 0;
    if (!f || U_FAILURE(status)) {
      out.append(s, i, utf8CharLen(s, i));
      continue;
    }
    for (int32_t k = 0; k < n;) {
      UChar32 d;
      U16_NEXT_UNSAFE(dst, k, d);
      utf8Append(out, static_cast<uint32_t>(d));
    }
  }
  s = std::move(out);
}

} // namespace lockstep::text::detail
