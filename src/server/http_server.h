// httplib's server with one change: a client has a bounded time to send a whole request.
// httplib bounds each read (read timeout) but not their sum, so a client that sends a header
// byte every few seconds holds a connection thread for as long as it likes, and a few dozen of
// them leave none to answer anyone else.
#pragma once
#include <httplib.h>

#include <chrono>

namespace hfstatic::server {

class BoundedHttpServer : public httplib::Server {
 public:
  // From the first byte of a request to the end of its body; the default is httplib's read
  // timeout. A request not read by then is dropped with its connection.
  void set_request_timeout(std::chrono::milliseconds timeout) { request_timeout_ = timeout; }

 private:
  bool process_and_close_socket(socket_t sock) override;
  bool next_request_arrives(socket_t sock) const;

  std::chrono::milliseconds request_timeout_{10000};
};

}  // namespace hfstatic::server
