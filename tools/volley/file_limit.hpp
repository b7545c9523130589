#pragma once
// Thousands of connections need more descriptors than the usual soft limit of
// 1024: programs that hold many raise their soft limit to the hard one.
#include <sys/resource.h>

namespace volley::tools {

inline void raise_file_limit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0 && r.rlim_cur < r.rlim_max) {
    r.rlim_cur = r.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &r);
  }
}

}  // namespace volley::tools
