//===- ByteLevel.cpp - GPT-2's byte-to-character table --------------------===//
//
// Byte-level BPE sees text as bytes, each shown as a printable character:
// '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for themselves, the other 68
// bytes for U+0100 onwards in byte order (so ' ' is 'Ġ', '\n' is 'Ċ').
//
//===----------------------------------------------------------------------===//
#include "TextInternal.h"

#include <array>

namespace lockstep::text::detail {

namespace {

struct Table {
  std::array<uint32_t, 256> toChar{};
  std::array<int16_t, 512> toByte{};
  Table() {
    toByte.fill(-1);
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      bool self = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
      toChar[b] = self ? static_cast<uint32_t>(b) : next++;
      toByte[toChar[b]] = static_cast<int16_t>(b);
    }
  }
};

const Table &table() {
  static const Table t;
  return t;
}

} // namespace

uint32_t byteToChar(uint8_t b) { return table().toChar[b]; }

int charToByte(uint32_t cp) { return cp < 512 ? table().toByte[cp] : -1; }

std::string byteLevelMap(std::string_view s) {
  std::string out;
  out.reserve(s.size() * 2);
  for (char c : s)
    utf8Append(out, byteToChar(static_cast<uint8_t>(c)));
  return out;
}

} // namespace lockstep::text::detail
