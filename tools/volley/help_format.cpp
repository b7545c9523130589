#include "help_format.hpp"

#include <string>
#include <string_view>

namespace volley::tools {

namespace {
// The value name CLI11 derives from the C++ type, as a reader would say it.
std::string value_name(const CLI::Option* opt) {
  std::string name = opt->get_type_name();
  name = name.substr(0, name.find(':'));  // drop the validators' descriptions
  if (name == "INT" || name == "UINT") return "N";
  if (name == "FLOAT") return "NUMBER";
  return name;
}
}  // namespace

std::string HelpFormatter::make_option_name(const CLI::Option* opt, bool is_positional) const {
  if (is_positional) return opt->get_name(true, false);
  std::string names;
  for (const std::string& s : opt->get_snames()) names += (names.empty() ? "-" : ", -") + s;
  for (const std::string& l : opt->get_lnames()) names += (names.empty() ? "--" : ", --") + l;
  return names;
}

std::string HelpFormatter::make_option_opts(const CLI::Option* opt) const {
  if (opt->get_type_size() == 0) return {};  // a flag takes no value
  std::string out = " ";
  out += opt->get_option_text().empty() ? value_name(opt) : opt->get_option_text();
  if (opt->get_expected_max() == CLI::detail::expected_max_vector_size) out += " ...";
  return out;
}

std::string HelpFormatter::make_option_desc(const CLI::Option* opt) const {
  std::string desc = opt->get_description();
  if (opt->get_required()) desc += " (required)";
  if (opt->get_type_size() != 0 && !opt->get_default_str().empty())
    desc += " [default: " + opt->get_default_str() + "]";
  return desc;
}

void use_help_format(CLI::App& app) { app.formatter(std::make_shared<HelpFormatter>()); }

}  // namespace volley::tools
