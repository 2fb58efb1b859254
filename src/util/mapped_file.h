// Read-only memory-mapped file, and atomic writing of new files.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace hfstatic {

// How a mapping's pages are backed. HugePages advises huge pages (util/huge_pages.h): pages the
// kernel reads in for the mapping then come in 2 MiB folios where it can, and a large file
// cached in small folios is dropped from the page cache once so that it comes back in huge
// ones. Worth it for a program's weights, read every token; not for a file read once.
enum class PagePolicy { Plain, HugePages };

class MappedFile {
 public:
  // Maps the whole file read-only. Throws Error naming the path on failure.
  static MappedFile open(const std::string& path, PagePolicy policy = PagePolicy::Plain);
  // Wraps memory that outlives the object (e.g. data linked into the binary); nothing is unmapped.
  static MappedFile borrow(const uint8_t* data, size_t size, const std::string& name);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  bool owned_ = true;
};

// Writes a file through a temporary sibling that is renamed into place on commit(); if the
// writer is destroyed before commit(), or the process is ended by SIGINT, SIGTERM or SIGHUP, the
// temporary file is removed and `path` is untouched. A `path` that exists and is not a regular
// file (a device, a FIFO, a directory, a symbolic link) is refused.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(const std::string& path);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;

  void write(const void* data, size_t size);
  void write_zeros(size_t size);
  uint64_t written() const { return written_; }
  void commit();

 private:
  std::string path_;
  std::string tmp_path_;
  int fd_ = -1;
  int temp_handle_ = -1;  // util/temp_files.h
  uint64_t written_ = 0;
};

// Opens `path` for reading if it is a regular file (never waiting on a FIFO) and sets *size;
// Error naming the path and what it is otherwise. The caller closes the descriptor.
int open_regular_file(const std::string& path, uint64_t* size);
// The whole of a regular file.
std::string read_text_file(const std::string& path);
bool file_exists(const std::string& path);

}  // namespace hfstatic
