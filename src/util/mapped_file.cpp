#include "util/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "util/error.h"
#include "util/huge_pages.h"
#include "util/temp_files.h"

namespace hfstatic {

namespace {

constexpr size_t kHugePage = size_t(2) << 20;

// Whether nearly every page of the mapping is in the page cache (mincore), so that touching
// them reads nothing from the disk.
bool mostly_cached(const uint8_t* p, size_t size) {
  const size_t page = size_t(::sysconf(_SC_PAGESIZE)), pages = (size + page - 1) / page;
  std::vector<unsigned char> resident(pages);
  if (::mincore(const_cast<uint8_t*>(p), size, resident.data()) != 0) return false;
  size_t cached = 0;
  for (unsigned char r : resident) cached += r & 1;
  return cached >= pages - pages / 16;
}

bool transparent_huge_pages_off() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  return !std::getline(in, line) || line.find("[never]") != std::string::npos;
}

// Advises huge pages for a read-only mapping of `fd`. When the file is already cached in small
// folios (see worth_rereading), the advice alone changes nothing, so the file is mapped again
// and its clean cached pages are dropped (posix_fadvise; pages other processes map stay): the
// reads that follow bring it back in huge folios, once, and later loads find them cached.
// Kernels and filesystems without large folios for files would read it back small on every
// load, so the first 2 MiB go first, and the rest only if they came back as one huge page.
// Dirty pages (a copy not yet written back) cannot be dropped: such a file is left as it is and
// a later load tries again.
void prefer_huge_pages(int fd, const uint8_t** data, size_t size) {
  void* p = const_cast<uint8_t*>(*data);
  if (!advise_huge_pages(p, size) || size < kRereadMinBytes || transparent_huge_pages_off() ||
      !mostly_cached(*data, size))
    return;
  volatile uint8_t sink = 0;
  for (size_t i = 0; i < size; i += kHugePage) sink = sink + (*data)[i];  // map one page per 2 MiB
  std::optional<PageUsage> usage = page_usage(p);
  if (!usage || !worth_rereading(*usage)) return;
  void* again = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (again == MAP_FAILED) return;  // keep the mapping there is
  ::munmap(p, size);
  advise_huge_pages(again, size);
  *data = static_cast<const uint8_t*>(again);
  ::posix_fadvise(fd, 0, kHugePage, POSIX_FADV_DONTNEED);
  sink = sink + (*data)[0];
  std::optional<PageUsage> first = page_usage(again);
  if (first && first->huge > 0) ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

const char* file_kind(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  return "not a regular file";
}

}  // namespace

int open_regular_file(const std::string& path, uint64_t* size) {
  // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer, forever.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) fail(path, ": cannot open: ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail(path, ": cannot stat: ", std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    fail(path, ": not a regular file (", file_kind(st.st_mode), ")");
  }
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  *size = static_cast<uint64_t>(st.st_size);
  return fd;
}

MappedFile MappedFile::open(const std::string& path, PagePolicy policy) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  MappedFile f;
  f.path_ = path;
  f.size_ = static_cast<size_t>(size);
  if (f.size_ > 0) {
    void* p = ::mmap(nullptr, f.size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      fail(path, ": cannot mmap: ", std::strerror(e));
    }
    f.data_ = static_cast<const uint8_t*>(p);
    if (policy == PagePolicy::HugePages) prefer_huge_pages(fd, &f.data_, f.size_);
  }
  ::close(fd);
  return f;
}

MappedFile MappedFile::borrow(const uint8_t* data, size_t size, const std::string& name) {
  MappedFile f;
  f.path_ = name;
  f.data_ = data;
  f.size_ = size;
  f.owned_ = false;
  return f;
}

MappedFile::MappedFile(MappedFile&& o) noexcept
    : path_(std::move(o.path_)), data_(o.data_), size_(o.size_), owned_(o.owned_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

MappedFile& MappedFile::operator=(MappedFile&& o) noexcept {
  if (this != &o) {
    if (data_ && owned_) ::munmap(const_cast<uint8_t*>(data_), size_);
    path_ = std::move(o.path_);
    data_ = o.data_;
    size_ = o.size_;
    owned_ = o.owned_;
    o.data_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

MappedFile::~MappedFile() {
  if (data_ && owned_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

AtomicFileWriter::AtomicFileWriter(const std::string& path)
    : path_(path), tmp_path_(path + ".tmp." + std::to_string(::getpid())) {
  struct stat st {};
  if (::lstat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    fail(path, ": exists and is ", S_ISLNK(st.st_mode) ? "a symbolic link" : file_kind(st.st_mode),
         "; refusing to replace it (remove it or choose another output path)");
  fd_ = ::open(tmp_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (fd_ < 0) fail(path, ": cannot create: ", std::strerror(errno));
  temp_handle_ = register_temp_file(tmp_path_);
}

AtomicFileWriter::~AtomicFileWriter() {
  if (fd_ >= 0) {
    ::close(fd_);
    ::unlink(tmp_path_.c_str());
  }
  unregister_temp_file(temp_handle_);
}

void AtomicFileWriter::write(const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = ::write(fd_, p, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(path_, ": write failed: ", std::strerror(errno));
    }
    p += n;
    size -= static_cast<size_t>(n);
    written_ += static_cast<uint64_t>(n);
  }
}

void AtomicFileWriter::write_zeros(size_t size) {
  static const std::vector<char> zeros(1 << 16, 0);
  while (size > 0) {
    size_t n = std::min(size, zeros.size());
    write(zeros.data(), n);
    size -= n;
  }
}

void AtomicFileWriter::commit() {
  if (::fsync(fd_) != 0) fail(path_, ": fsync failed: ", std::strerror(errno));
  if (::close(fd_) != 0) {
    fd_ = -1;
    ::unlink(tmp_path_.c_str());
    fail(path_, ": close failed: ", std::strerror(errno));
  }
  fd_ = -1;
  if (::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    int e = errno;
    ::unlink(tmp_path_.c_str());
    fail(path_, ": cannot rename temporary file into place: ", std::strerror(e));
  }
}

std::string read_text_file(const std::string& path) {
  uint64_t size = 0;
  const int fd = open_regular_file(path, &size);
  std::string text;
  char buffer[1 << 16];
  // The size fstat gave bounds the read: a file that grows meanwhile is read only that far.
  while (text.size() < size) {
    const ssize_t n = ::read(fd, buffer, std::min<uint64_t>(sizeof buffer, size - text.size()));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int e = errno;
      ::close(fd);
      fail(path, ": read failed: ", std::strerror(e));
    }
    if (n == 0) break;
    text.append(buffer, size_t(n));
  }
  ::close(fd);
  return text;
}

bool file_exists(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace hfstatic
