// Response ids ("chatcmpl-" or "cmpl-" + 16 hex digits) a client cannot predict from the ones it has seen (the
// old clock-xor-counter ids could be guessed): a 64-bit generator seeded from std::random_device, one per server,
// behind a mutex because every HTTP worker thread takes ids from it.
#pragma once
#include <mutex>
#include <random>
#include <string>
#include <string_view>

namespace tinfer::server {

class ResponseIds {
 public:
  ResponseIds();
  std::string next(std::string_view prefix);  // prefix + "%016x" of the next draw

 private:
  std::mutex mu_;
  std::mt19937_64 gen_;
};

}  // namespace tinfer::server
