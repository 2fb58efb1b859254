// A program file taken apart (its header's tensor entries, the program spec, the data) so that a
// harness or a test can break one thing in a real export and write it back: move a tensor to
// the end of a file that ends on a page boundary, change a node's attributes, reshape a tensor.
// Header-only; used by fuzz_quant and tests/hostile.
#pragma once
#include <algorithm>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>
#include <string_view>

namespace hfstatic::fuzz {

class ProgramFile {
 public:
  static constexpr uint64_t kPage = 4096;

  explicit ProgramFile(std::string_view bytes) {
    if (bytes.size() < 8) throw std::runtime_error("not a program file");
    uint64_t header_len = 0;
    for (int i = 0; i < 8; ++i) header_len |= uint64_t(uint8_t(bytes[size_t(i)])) << (8 * i);
    if (header_len > bytes.size() - 8) throw std::runtime_error("not a program file");
    header_ = nlohmann::json::parse(bytes.substr(8, header_len));
    spec_ = nlohmann::json::parse(header_.at("__metadata__").at("hfstatic.program").get<std::string>());
    data_ = std::string(bytes.substr(8 + header_len));
  }

  nlohmann::json& spec() { return spec_; }
  // The tensor entries by name: {"dtype", "shape", "data_offsets"}.
  nlohmann::json& tensor(const std::string& name) { return header_.at(name); }
  std::vector<std::string> tensor_names() const {
    std::vector<std::string> out;
    for (const auto& [name, entry] : header_.items())
      if (name != "__metadata__") out.push_back(name);
    return out;
  }
  std::string_view tensor_bytes(const std::string& name) const {
    const auto& o = header_.at(name).at("data_offsets");
    return std::string_view(data_).substr(o[0].get<uint64_t>(), o[1].get<uint64_t>() - o[0].get<uint64_t>());
  }

  // The tensor's bytes replaced (any size) and placed after every other tensor; its old bytes
  // are zeroed. With at_page_end, bytes() pads the file before it so that the tensor's last byte
  // is the file's last and the file's size is a multiple of kPage.
  void place_last(const std::string& name, std::string bytes, bool at_page_end) {
    auto& o = header_.at(name).at("data_offsets");
    const uint64_t begin = o[0], end = o[1];
    std::fill(data_.begin() + int64_t(begin), data_.begin() + int64_t(end), '\0');
    last_ = name;
    last_bytes_ = std::move(bytes);
    last_at_page_end_ = at_page_end;
  }
  void move_to_page_end(const std::string& name) { place_last(name, std::string(tensor_bytes(name)), true); }

  // The file: a header of a fixed length (whatever the digits of the new offsets), the data
  // starting 8 bytes past a multiple of 64, tensors aligned as they were.
  std::string bytes() {
    std::string data = data_;
    if (!last_.empty()) {
      const uint64_t size = last_bytes_.size();
      const uint64_t header_len = padded_header_len(), start = 8 + header_len;
      uint64_t end = (data.size() + size + 63) / 64 * 64;
      if (last_at_page_end_)
        while ((start + end) % kPage != 0) end += 8;
      data.resize(end - size, '\0');
      data += last_bytes_;
      header_[last_]["data_offsets"] = {end - size, end};
      return assemble(header_len, data);
    }
    return assemble(padded_header_len(), data);
  }

 private:
  uint64_t padded_header_len() {
    header_["__metadata__"]["hfstatic.program"] = spec_.dump();
    return (header_.dump().size() + 64 + 63) / 64 * 64;
  }
  std::string assemble(uint64_t header_len, const std::string& data) {
    header_["__metadata__"]["hfstatic.program"] = spec_.dump();
    std::string header = header_.dump();
    if (header.size() > header_len) throw std::runtime_error("the header outgrew its room");
    header.resize(header_len, ' ');
    std::string out;
    for (int i = 0; i < 8; ++i) out.push_back(char(uint8_t(header_len >> (8 * i))));
    return out + header + data;
  }

  nlohmann::json header_, spec_;
  std::string data_;
  std::string last_, last_bytes_;
  bool last_at_page_end_ = false;
};

}  // namespace hfstatic::fuzz
