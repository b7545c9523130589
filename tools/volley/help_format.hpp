#pragma once
// One way every program prints its help. Each option's value is named by what
// it is (ADDRESS, PORT, N, DURATION, FILE, or its choices a|b|c), its default
// shown once, at the end of its description as "[default: X]", and none of the
// parser's own type text ("INT:INT in [1 - 256]", "ENUM:value in {..}",
// "--no-progress{false}", "=5"). Set it on the top-level app before adding
// subcommands: each subcommand takes its parent's formatter when it is made.
#include <CLI/CLI.hpp>

namespace volley::tools {

class HelpFormatter : public CLI::Formatter {
 public:
  std::string make_option_name(const CLI::Option* opt, bool is_positional) const override;
  std::string make_option_opts(const CLI::Option* opt) const override;
  std::string make_option_desc(const CLI::Option* opt) const override;
};

// Gives `app` (and the subcommands added to it afterwards) the HelpFormatter.
void use_help_format(CLI::App& app);

}  // namespace volley::tools
