#include "server/http_server.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>

namespace hfstatic::server {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on sock for at most `timeout` (EINTR retried); whether they came.
bool wait_for(socket_t sock, short events, std::chrono::milliseconds timeout) {
  const auto until = Clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - Clock::now());
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

// A connection's stream whose reads end at the current request's deadline.
class DeadlineStream : public httplib::Stream {
 public:
  DeadlineStream(socket_t sock, std::chrono::milliseconds read_timeout, std::chrono::milliseconds write_timeout)
      : sock_(sock), read_timeout_(read_timeout), write_timeout_(write_timeout) {}

  void start_request(std::chrono::milliseconds timeout) { deadline_ = Clock::now() + timeout; }

  bool is_readable() const override {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline_ - Clock::now());
    return wait_for(sock_, POLLIN, std::min(read_timeout_, left));
  }
  bool is_writable() const override { return wait_for(sock_, POLLOUT, write_timeout_); }
  ssize_t read(char* ptr, size_t size) override {
    if (!is_readable()) return -1;
    ssize_t n;
    do n = ::recv(sock_, ptr, size, 0);
    while (n < 0 && errno == EINTR);
    return n;
  }
  ssize_t write(const char* ptr, size_t size) override {
    if (!is_writable()) return -1;
    ssize_t n;
    do n = ::send(sock_, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getpeername(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    sockaddr_storage addr{};
    socklen_t len = sizeof addr;
    if (::getsockname(sock_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) address_of(addr, len, ip, port);
  }
  socket_t socket() const override { return sock_; }

 private:
  socket_t sock_;
  std::chrono::milliseconds read_timeout_, write_timeout_;
  Clock::time_point deadline_ = Clock::now();
};

std::chrono::milliseconds to_ms(time_t sec, time_t usec) {
  return std::chrono::milliseconds(int64_t(sec) * 1000 + int64_t(usec) / 1000);
}

}  // namespace

// An idle connection waits for its next request at most the keep-alive timeout, and not past stop().
bool BoundedHttpServer::next_request_arrives(socket_t sock) const {
  const auto until = Clock::now() + std::chrono::seconds(keep_alive_timeout_sec_);
  while (svr_sock_ != INVALID_SOCKET && Clock::now() < until)
    if (wait_for(sock, POLLIN, std::chrono::milliseconds(50))) return true;
  return false;
}

// The keep-alive loop of httplib's own implementation, with a deadline per request.
bool BoundedHttpServer::process_and_close_socket(socket_t sock) {
  DeadlineStream stream(sock, to_ms(read_timeout_sec_, read_timeout_usec_),
                        to_ms(write_timeout_sec_, write_timeout_usec_));
  bool ok = false;
  for (size_t left = keep_alive_max_count_; left > 0 && svr_sock_ != INVALID_SOCKET; --left) {
    if (!next_request_arrives(sock)) break;
    stream.start_request(request_timeout_);
    bool connection_closed = false;
    ok = process_request(stream, /*close_connection=*/left == 1 || svr_sock_ == INVALID_SOCKET, connection_closed,
                         nullptr);
    if (!ok || connection_closed) break;
  }
  ::shutdown(sock, SHUT_RDWR);
  ::close(sock);
  return ok;
}

}  // namespace hfstatic::server
