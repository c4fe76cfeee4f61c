#include "report/html_writer.h"

#include "report/html_assets.h"
#include "report/json_writer.h"

namespace hangscan {

std::string json_for_script(std::string_view json) {
  std::string out;
  out.reserve(json.size() + json.size() / 64);
  for (char c : json) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string render_html(const JobSnapshot& job, const Analysis& analysis) {
  std::string_view page = html_assets::page;
  std::string data = json_for_script(write_json(job, &analysis, -1));
  std::string out;
  out.reserve(page.size() + html_assets::css.size() + html_assets::js.size() + data.size());
  // Each placeholder stands once in the page, in this order.
  std::size_t at = 0;
  for (auto [mark, text] :
       {std::pair<std::string_view, std::string_view>{"@CSS@", html_assets::css},
        {"@DATA@", data},
        {"@JS@", html_assets::js}}) {
    std::size_t hit = page.find(mark, at);
    out.append(page.substr(at, hit - at));
    out.append(text);
    at = hit + mark.size();
  }
  out.append(page.substr(at));
  return out;
}

}  // namespace hangscan
