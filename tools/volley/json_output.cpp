// Boost.JSON is used header-only: its sources are compiled once, here.
#include <boost/json/src.hpp>

#include "json_output.hpp"

namespace volley::tools {

std::string to_json_text(const boost::json::value& value) { return boost::json::serialize(value); }

}  // namespace volley::tools
