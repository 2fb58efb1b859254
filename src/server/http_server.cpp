#include "server/http_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

namespace hfstatic::server {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

// Past this, httplib is given what came and refuses it.
constexpr size_t kMaxHeaderBytes = 64 << 10;
constexpr size_t kReadChunk = 64 << 10;
// How long a closing connection's unread input is discarded, so that the client reads the
// answer rather than a reset (a refused body may still be on its way).
constexpr milliseconds kLinger{2000};
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";

// Waits for `events` on sock for at most `timeout` (EINTR retried); whether they came.
bool wait_for(socket_t sock, short events, milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<milliseconds>(until - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{sock, events, 0};
    const int n = ::poll(&p, 1, int(left.count()));
    if (n < 0 && errno == EINTR) continue;
    return n > 0 && (p.revents & (events | POLLHUP | POLLERR));
  }
}

void address_of(const sockaddr_storage& addr, socklen_t len, std::string& ip, int& port) {
  char host[NI_MAXHOST] = "";
  if (::getnameinfo(reinterpret_cast<const sockaddr*>(&addr), len, host, sizeof host, nullptr, 0, NI_NUMERICHOST) == 0)
    ip = host;
  if (addr.ss_family == AF_INET) port = ntohs(reinterpret_cast<const sockaddr_in*>(&addr)->sin_port);
  if (addr.ss_family == AF_INET6) port = ntohs(reinterpret_cast<const sockaddr_in6*>(&addr)->sin6_port);
}

milliseconds to_ms(time_t sec, time_t usec) { return milliseconds(int64_t(sec) * 1000 + int64_t(usec) / 1000); }

char ascii_lower(char ch) { return ch >= 'A' && ch <= 'Z' ? char(ch - 'A' + 'a') : ch; }

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return ascii_lower(x) == ascii_lower(y); });
}

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// What the headers say of the body that follows them.
struct Framing {
  uint64_t length = 0;   // Content-Length
  bool unknown = false;  // a transfer coding, or a Content-Length that is not a number
  bool expect_continue = false;
};

// `head`: the request line and the header lines, each ending in CRLF.
Framing framing_of(std::string_view head) {
  Framing f;
  bool have_length = false;
  for (size_t pos = head.find("\r\n") + 2; pos < head.size();) {
    const size_t eol = head.find("\r\n", pos);
    const std::string_view line = head.substr(pos, eol - pos);
    pos = eol + 2;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view name = line.substr(0, colon), value = trimmed(line.substr(colon + 1));
    if (same_name(name, "Content-Length") && !have_length) {
      have_length = true;
      f.unknown |= value.empty() || value.size() > 18 ||
                   !std::all_of(value.begin(), value.end(), [](char ch) { return ch >= '0' && ch <= '9'; });
      if (!f.unknown) f.length = std::stoull(std::string(value));
    } else if (same_name(name, "Transfer-Encoding") && !same_name(value, "identity")) {
      f.unknown = true;
    } else if (same_name(name, "Expect") && same_name(value, "100-continue")) {
      f.expect_continue = true;
    }
  }
  return f;
}

// A connection between requests: what has been read of the next one.
struct Connection {
  explicit Connection(socket_t sock) : sock(sock) {}
  ~Connection() { ::close(sock); }
  Connection(const Connection&) = delete;
  Connection& operator=(const Connection&) = delete;

  socket_t sock;
  std::string buf;             // from the first byte of the current request
  size_t scanned = 0;          // searched for the end of the headers this far
  size_t request_end = 0;      // once known, where the current request ends in buf
  bool close_after = false;    // its end is not known: answer it, then close
  bool continue_sent = false;  // its Expect: 100-continue is answered
  bool draining = false;       // answered and shut for writing; its input is discarded
  size_t served = 0;           // requests answered
  Clock::time_point since;     // when it began to wait
  Clock::time_point deadline;  // when it is dropped
};

// One request's bytes, read from the connection's buffer; writes go to the socket.
class RequestStream : public httplib::Stream {
 public:
  RequestStream(Connection& c, milliseconds write_timeout) : c_(c), write_timeout_(write_timeout) {}

  bool is_readable() const override { return pos_ < c_.request_end; }
  bool is_writable() const override { return wait_for(c_.sock, POLLOUT, write_timeout_); }
  ssize_t read(char* ptr, size_t size) override {
    size = std::min(size, c_.request_end - pos_);
    std::memcpy(ptr, c_.buf.data() + pos_, size);
    pos_ += size;
    return ssize_t(size);
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (c_.continue_sent && std::string_view(ptr, size) == kContinue) {
      c_.continue_sent = false;  // the reading stage has sent it
      return ssize_t(size);
    }
    for (;;) {
      if (!is_writable()) return -1;
      const ssize_t n = ::send(c_.sock, ptr, size, MSG_NOSIGNAL);
      if (n >= 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) return n;
    }
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(c_.sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(c_.sock, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  socket_t socket() const override { return c_.sock; }

 private:
  Connection& c_;
  milliseconds write_timeout_;
  size_t pos_ = 0;
};

}  // namespace

// httplib's task queue, in the role of the reading stage: its accept loop calls enqueue() with
// a call of process_and_close_socket(), which hands the connection to the reading thread.
class BoundedHttpServer::Stage : public httplib::TaskQueue {
 public:
  explicit Stage(BoundedHttpServer& server)
      : server_(server), workers_(server.worker_threads_), wake_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
    server_.stage_ = this;
    // httplib listens with a backlog of 5: past that, a burst of connections has the kernel
    // drop connection requests, and each is retried a second later.
    ::listen(server_.svr_sock_, SOMAXCONN);
    thread_ = std::thread([this] { run(); });
  }
  ~Stage() override {
    server_.stage_ = nullptr;
    ::close(wake_);
  }

  void enqueue(std::function<void()> fn) override { fn(); }

  void shutdown() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
    }
    wake();
    thread_.join();
    workers_.shutdown();
    inbox_.clear();
  }

  // A connection to read the next request of, or to drain; closed when the stage has stopped.
  void add(std::unique_ptr<Connection> c) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) return;
      inbox_.push_back(std::move(c));
    }
    wake();
  }

 private:
  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_, &one, sizeof one);
  }

  void run();
  bool read_some(Connection& c, Clock::time_point now);
  bool whole_request(Connection& c);
  void answer(std::unique_ptr<Connection> c);

  BoundedHttpServer& server_;
  httplib::ThreadPool workers_;
  int wake_;
  std::mutex mutex_;
  std::vector<std::unique_ptr<Connection>> inbox_;
  bool stopped_ = false;
  std::thread thread_;
};

BoundedHttpServer::BoundedHttpServer() {
  new_task_queue = [this] { return new Stage(*this); };
}

BoundedHttpServer::~BoundedHttpServer() = default;

bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  ::fcntl(sock, F_SETFL, ::fcntl(sock, F_GETFL) | O_NONBLOCK);
  auto c = std::make_unique<Connection>(sock);
  c->since = Clock::now();
  c->deadline = c->since + std::chrono::seconds(keep_alive_timeout_sec_);
  stage_->add(std::move(c));
  return true;
}

void BoundedHttpServer::Stage::run() {
  std::vector<std::unique_ptr<Connection>> waiting;
  std::vector<pollfd> fds;
  for (;;) {
    auto now = Clock::now();
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (stopped_) break;
      for (auto& c : inbox_) {
        // Back from a worker, a connection may already hold its next request.
        if (!c->draining && c->buf.size() > 0 && whole_request(*c)) {
          answer(std::move(c));
        } else {
          waiting.push_back(std::move(c));
        }
      }
      inbox_.clear();
    }
    while (waiting.size() > server_.max_waiting_) {
      auto oldest = std::min_element(waiting.begin(), waiting.end(),
                                     [](const auto& a, const auto& b) { return a->since < b->since; });
      waiting.erase(oldest);
    }

    fds.assign(1, pollfd{wake_, POLLIN, 0});
    auto next = now + std::chrono::seconds(1);
    for (const auto& c : waiting) {
      fds.push_back(pollfd{c->sock, POLLIN, 0});
      next = std::min(next, c->deadline);
    }
    const auto timeout = std::chrono::duration_cast<milliseconds>(next - now).count() + 1;
    if (::poll(fds.data(), fds.size(), int(std::max<int64_t>(timeout, 0))) < 0 && errno != EINTR)
      std::this_thread::sleep_for(milliseconds(10));  // out of memory for a moment: try again
    if (fds[0].revents) {
      uint64_t n;
      [[maybe_unused]] ssize_t r = ::read(wake_, &n, sizeof n);
    }

    now = Clock::now();
    for (size_t i = 0; i < waiting.size(); ++i) {
      Connection& c = *waiting[i];
      if (fds[i + 1].revents && !read_some(c, now)) {
        waiting[i].reset();
      } else if (!c.draining && c.request_end > 0 && c.buf.size() >= c.request_end) {
        answer(std::move(waiting[i]));
      } else if (now >= c.deadline) {
        waiting[i].reset();  // the request took too long, or the connection stayed idle
      }
    }
    std::erase(waiting, nullptr);
  }
}

// Reads what has come; false when the connection is to be closed.
bool BoundedHttpServer::Stage::read_some(Connection& c, Clock::time_point now) {
  if (c.draining) {
    char discard[16 << 10];
    const ssize_t n = ::recv(c.sock, discard, sizeof discard, 0);
    return n > 0 || (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR));
  }
  const size_t want = c.request_end > 0 ? std::min(kReadChunk, c.request_end - c.buf.size()) : kReadChunk;
  const size_t had = c.buf.size();
  c.buf.resize(had + want);
  const ssize_t n = ::recv(c.sock, c.buf.data() + had, want, 0);
  c.buf.resize(had + std::max<ssize_t>(n, 0));
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n == 0) return false;  // the client is gone (or will send no more of a request)
  if (had == 0) c.deadline = now + server_.request_timeout_;
  if (c.request_end == 0) whole_request(c);
  return true;
}

// Finds where the request at the front of c.buf ends, once its headers are in; whether all of
// it is in. A request whose end the headers do not tell ends with them, and closes its
// connection: httplib refuses it, or answers before it would read its body.
bool BoundedHttpServer::Stage::whole_request(Connection& c) {
  if (c.request_end == 0) {
    const size_t at = c.buf.find("\r\n\r\n", c.scanned >= 3 ? c.scanned - 3 : 0);
    if (at == std::string::npos) {
      c.scanned = c.buf.size();
      if (c.buf.size() <= kMaxHeaderBytes) return false;
      c.request_end = c.buf.size();
      c.close_after = true;
      return true;
    }
    const Framing f = framing_of(std::string_view(c.buf).substr(0, at + 2));
    c.request_end = at + 4;
    if (f.unknown || f.length > server_.payload_max_length_) {
      c.close_after = true;
      return true;
    }
    c.request_end += f.length;
    if (f.expect_continue && c.buf.size() < c.request_end)
      c.continue_sent = ::send(c.sock, kContinue.data(), kContinue.size(), MSG_NOSIGNAL) == ssize_t(kContinue.size());
  }
  return c.buf.size() >= c.request_end;
}

// On a worker: answers the request, then hands the connection back to wait for its next one,
// or to drain before it closes.
void BoundedHttpServer::Stage::answer(std::unique_ptr<Connection> c) {
  Connection* raw = c.release();  // std::function needs a copyable call
  workers_.enqueue([this, raw] {
    std::unique_ptr<Connection> c(raw);
    RequestStream stream(*c, to_ms(server_.write_timeout_sec_, server_.write_timeout_usec_));
    const bool last =
        c->close_after || ++c->served >= server_.keep_alive_max_count_ || server_.svr_sock_ == INVALID_SOCKET;
    bool closed = false;
    if (!server_.process_request(stream, last, closed, nullptr)) return;
    c->since = Clock::now();
    if (last || closed) {
      ::shutdown(c->sock, SHUT_WR);
      c->draining = true;
      c->buf.clear();
      c->request_end = 0;
      c->deadline = c->since + kLinger;
    } else {
      c->buf = c->buf.substr(c->request_end);  // not keeping a large body's capacity while idle
      c->scanned = c->request_end = 0;
      c->continue_sent = false;
      c->deadline = c->since +
                    (c->buf.empty() ? std::chrono::seconds(server_.keep_alive_timeout_sec_) : server_.request_timeout_);
    }
    add(std::move(c));
  });
}

}  // namespace hfstatic::server
