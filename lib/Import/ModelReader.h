//===- ModelReader.h - Reading ONNX files without their weights -*- C++ -*-===//
#ifndef LOCKSTEP_LIB_IMPORT_MODELREADER_H
#define LOCKSTEP_LIB_IMPORT_MODELREADER_H

#include "onnx/onnx_pb.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

/// Where an initializer's raw bytes are: a file, an offset and a length.
struct WeightLocation {
  std::string file;
  uint64_t offset = 0;
  uint64_t length = 0;
};

struct LoadedModel {
  onnx::ModelProto model;
  /// One entry per graph initializer, in order: where its raw bytes are, when
  /// they are raw bytes (inline raw_data, or external data).
  std::vector<std::optional<WeightLocation>> initializerData;
};

/// Reads a binary ONNX model without loading initializer raw_data into
/// memory: the protobuf is rewritten with raw_data fields cut out and their
/// file offsets recorded. External data files are checked to exist and to be
/// large enough. Returns an error message on failure.
std::optional<std::string> readBinaryModel(const std::string &path,
                                           LoadedModel &out);

/// Reads a model in the ONNX textual syntax.
std::optional<std::string> readTextModel(const std::string &path,
                                         LoadedModel &out);

} // namespace lockstep

#endif
