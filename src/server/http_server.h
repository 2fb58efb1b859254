// httplib's server, with the reading of requests taken off its connection threads.
// httplib reads a request on the thread that then answers it: a client that sends its headers
// slowly holds that thread, and a few dozen such clients leave none to answer anyone else. Here
// one thread reads every connection's next request with poll(), headers and body (by its
// Content-Length), and hands only whole requests to the threads that answer them. Connections
// waiting for their next request wait there too.
#pragma once
#include <httplib.h>

#include <chrono>
#include <cstddef>

namespace hfstatic::server {

class BoundedHttpServer : public httplib::Server {
 public:
  BoundedHttpServer();
  ~BoundedHttpServer() override;

  // Threads that answer whole requests; each is held while its handler runs.
  void set_worker_threads(size_t n) { worker_threads_ = n; }
  // From the first byte of a request to the end of its body; a request not read by then is
  // dropped with its connection.
  void set_request_timeout(std::chrono::milliseconds timeout) { request_timeout_ = timeout; }
  // Connections reading a request or waiting for their next one; past this many, the one that
  // has waited longest is dropped.
  void set_max_waiting_connections(size_t n) { max_waiting_ = n; }

 private:
  class Stage;

  bool process_and_close_socket(socket_t sock) override;

  size_t worker_threads_ = 8;
  std::chrono::milliseconds request_timeout_{10000};
  size_t max_waiting_ = 512;
  Stage* stage_ = nullptr;  // while listening
};

}  // namespace hfstatic::server
