//===- Evaluate.h - Compile-time evaluation of small onnx subgraphs -*- C++ -*-===//
//
// Evaluates the value of an onnx-dialect tensor at compile time, for given
// sizes of the graph's symbolic dims and given values of the inputs it
// reads. lockstep-prove-mask uses it to run the graph's own mask subgraph
// over a grid of (past, seq) sizes, so that the mask a model is served with
// is the one its graph computes, never one assumed.
//
// It covers the ops that exporters build masks and positions from (shape
// ops, integer and boolean arithmetic and comparisons, Where, Range, Gather,
// GatherND, Slice, Expand, Reshape, Concat, CumSum, Trilu, Cast, constants
// and small weights) with ONNX's semantics. Floating-point results are
// rounded to their element type after every op. Anything else, an input
// whose values are not given, or a tensor larger than the element budget, is
// a failure with the node and the reason.
//
//===----------------------------------------------------------------------===//
#ifndef LOCKSTEP_SERVING_EVALUATE_H
#define LOCKSTEP_SERVING_EVALUATE_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace lockstep {

/// A small tensor: its shape and its elements in row-major order, as exact
/// integers (integer and boolean element types) or doubles (floating-point
/// element types, each value representable in the element type).
struct EvalTensor {
  enum class Kind { Bool, Int, Float };
  Kind kind = Kind::Int;
  llvm::SmallVector<int64_t> shape;
  std::vector<int64_t> ints;     // Bool and Int
  std::vector<double> floats;    // Float
  int64_t size() const;
  double at(int64_t i) const { return kind == Kind::Float ? floats[i] : (double)ints[i]; }
};

class SubgraphEvaluator {
public:
  /// `symbols` gives each symbolic dim its size. `input` gives the values of
  /// a function argument (nullopt: its values may not be read; its shape
  /// still may, through Shape). `maxElements` bounds every tensor.
  SubgraphEvaluator(std::map<std::string, int64_t> symbols,
                    std::function<std::optional<EvalTensor>(mlir::BlockArgument)> input,
                    int64_t maxElements = int64_t(1) << 24);

  /// The value of `v`, or nullopt with `why()` set (naming the node).
  std::optional<EvalTensor> eval(mlir::Value v);
  const std::string &why() const { return reason; }

  /// The sizes of `v`'s dims under the symbols, if its dims are known.
  std::optional<llvm::SmallVector<int64_t>> sizesOf(mlir::Value v) const;

private:
  std::optional<EvalTensor> compute(mlir::Operation *op, unsigned result);
  std::optional<EvalTensor> fail(mlir::Operation *op, const std::string &what);

  std::map<std::string, int64_t> symbols;
  std::function<std::optional<EvalTensor>(mlir::BlockArgument)> input;
  int64_t maxElements;
  llvm::DenseMap<mlir::Value, EvalTensor> memo;
  std::string reason;
  int depth = 0;
};

/// The sizes of `v`'s dims with `symbols` substituted, if its dims are known
/// and each evaluates to a size.
std::optional<llvm::SmallVector<int64_t>>
sizesUnder(mlir::Value v, const std::map<std::string, int64_t> &symbols);

/// The name of the ONNX node `op` came from, and its op type, for messages.
std::string describeNode(mlir::Operation *op);

} // namespace lockstep

#endif
