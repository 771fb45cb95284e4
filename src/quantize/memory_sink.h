// MemorySink: a QuantizedSink that keeps the quantized tensors in memory (one buffer each, the quantizer's own
// moved in), for quantize-on-load and for comparing candidate quantizations before one is written. It can
// become a self-contained Model, or be replayed into another sink (a file) as if quantize_tensors wrote it there.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "formats/gguf.h"
#include "quantize/quantize_model.h"

namespace tinfer {

class Model;

class MemorySink final : public QuantizedSink {
 public:
  void open(const std::vector<std::pair<std::string, GgufValue>>& metadata, const GgufWriter& layout) override;
  void append(const uint8_t* data, size_t bytes, std::vector<uint8_t>* owned) override;
  void commit() override;
  uint64_t bytes_written() const override { return written_; }
  uint64_t total_bytes() const override { return total_; }

  // The tensors as a Model (res: the run's report, for the names, types and shapes; source: the model that was
  // quantized, whose path the new one keeps). Shares the buffers: the sink may go.
  std::unique_ptr<Model> to_model(const Model& source, const QuantizeResult& res, const std::string& label) const;
  // open, every append and commit on `to`, with the bytes held here (which stay).
  void replay(QuantizedSink& to) const;

 private:
  struct Buffers {
    std::vector<std::vector<uint8_t>> data;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  GgufWriter layout_;
  std::shared_ptr<Buffers> buffers_ = std::make_shared<Buffers>();
  std::vector<size_t> sizes_;
  uint64_t total_ = 0, header_ = 0, written_ = 0;
};

}  // namespace tinfer
