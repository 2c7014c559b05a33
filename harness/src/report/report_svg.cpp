#include "report/report_svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "report/report_html.hpp"

namespace pb::report::svg {
namespace {

// Pixel coordinates with one decimal: enough for a sharp chart, short markup.
std::string px(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f", value);
  return text;
}

std::string attribute(const std::string& name, const std::string& value) {
  return value.empty() ? "" : " " + name + "=\"" + escape(value) + "\"";
}

std::string title_element(const std::string& tooltip) {
  return tooltip.empty() ? "" : "<title>" + escape(tooltip) + "</title>";
}

std::vector<double> log_ticks(double lo, double hi) {
  const int first = static_cast<int>(std::floor(std::log10(lo))), last = static_cast<int>(std::ceil(std::log10(hi)));
  // Few decades: label 1, 2, 5 of each; within one decade, every integer multiple.
  std::vector<double> multiples{1};
  if (last - first <= 2) multiples = {1, 2, 5};
  if (last - first <= 1) multiples = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  std::vector<double> ticks;
  for (int decade = first; decade <= last; ++decade)
    for (double m : multiples) {
      const double value = m * std::pow(10.0, decade);
      if (value >= lo * 0.999 && value <= hi * 1.001) ticks.push_back(value);
    }
  return ticks;
}

std::vector<double> linear_ticks(double lo, double hi) {
  const double raw_step = (hi - lo) / 5;
  if (!(raw_step > 0)) return {lo};
  const double power = std::pow(10.0, std::floor(std::log10(raw_step)));
  double step = power;
  for (double m : {2.0, 5.0, 10.0})
    if (raw_step > step) step = m * power;
  std::vector<double> ticks;
  for (double value = std::ceil(lo / step) * step; value <= hi + step * 1e-9; value += step)
    ticks.push_back(std::fabs(value) < step * 1e-9 ? 0.0 : value);
  return ticks;
}

}  // namespace

double Scale::operator()(double value) const {
  const double t = log ? (std::log(value) - std::log(lo)) / (std::log(hi) - std::log(lo)) : (value - lo) / (hi - lo);
  return from + t * (to - from);
}

std::vector<double> Scale::ticks() const { return log ? log_ticks(lo, hi) : linear_ticks(lo, hi); }

std::pair<double, double> log_range(const std::vector<double>& values, double margin, double min_span) {
  double lo = INFINITY, hi = -INFINITY;
  for (double value : values)
    if (value > 0 && std::isfinite(value)) lo = std::min(lo, value), hi = std::max(hi, value);
  if (!(lo <= hi)) return {1, 10};
  lo /= margin, hi *= margin;
  if (hi / lo < min_span) {
    const double widen = std::sqrt(min_span / (hi / lo));
    lo /= widen, hi *= widen;
  }
  return {lo, hi};
}

Canvas::Canvas(int width, int height, const std::string& css_class, const std::string& label)
    : width_(width), height_(height) {
  open_ = "<svg class=\"chart " + escape(css_class) + "\" width=\"" + std::to_string(width) + "\" height=\"" +
          std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " + std::to_string(height) +
          "\" role=\"img\" aria-label=\"" + escape(label) + "\">";
}

void Canvas::line(double x1, double y1, double x2, double y2, const std::string& css_class, const std::string& stroke) {
  body_ += "<line x1=\"" + px(x1) + "\" y1=\"" + px(y1) + "\" x2=\"" + px(x2) + "\" y2=\"" + px(y2) + "\"" +
           attribute("class", css_class) + attribute("stroke", stroke) + "/>";
}

void Canvas::rect(double x, double y, double w, double h, const std::string& fill, const std::string& css_class,
                  const std::string& tooltip) {
  body_ += "<rect x=\"" + px(x) + "\" y=\"" + px(y) + "\" width=\"" + px(std::max(w, 0.0)) + "\" height=\"" +
           px(std::max(h, 0.0)) + "\"" + attribute("fill", fill) + attribute("class", css_class) + ">" +
           title_element(tooltip) + "</rect>";
}

void Canvas::point(double x, double y, const std::string& fill, const std::string& tooltip, double radius,
                   const std::string& css_class) {
  body_ += "<circle class=\"" + escape(css_class) + "\" cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"" + px(radius) + "\"" +
           attribute("fill", fill) + ">" + title_element(tooltip) + "</circle>";
}

void Canvas::polyline(const std::vector<Point>& points, const std::string& stroke, const std::string& css_class) {
  if (points.size() < 2) return;
  std::string coordinates;
  for (const Point& p : points) coordinates += (coordinates.empty() ? "" : " ") + px(p.first) + "," + px(p.second);
  body_ += "<polyline" + attribute("class", css_class) + " points=\"" + coordinates + "\"" + attribute("stroke", stroke) + "/>";
}

void Canvas::error_bar(double x1, double y1, double x2, double y2, const std::string& stroke) {
  const bool vertical = std::fabs(x1 - x2) < std::fabs(y1 - y2);
  const double cap = 4;
  line(x1, y1, x2, y2, "interval", stroke);
  if (vertical) {
    line(x1 - cap, y1, x1 + cap, y1, "interval", stroke);
    line(x2 - cap, y2, x2 + cap, y2, "interval", stroke);
  } else {
    line(x1, y1 - cap, x1, y1 + cap, "interval", stroke);
    line(x2, y2 - cap, x2, y2 + cap, "interval", stroke);
  }
}

void Canvas::text(double x, double y, const std::string& content, const std::string& css_class, const std::string& anchor,
                  double rotate) {
  std::string transform;
  if (rotate != 0) transform = "rotate(" + px(rotate) + " " + px(x) + " " + px(y) + ")";
  body_ += "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + attribute("class", css_class) +
           (anchor == "start" ? "" : attribute("text-anchor", anchor)) + attribute("transform", transform) + ">" +
           escape(content) + "</text>";
}

std::string Canvas::str() const { return open_ + body_ + "</svg>"; }

void y_axis(Canvas& canvas, const Scale& y, double x_left, double x_right, const std::string& label,
            std::string (*format)(double)) {
  for (double tick : y.ticks()) {
    canvas.line(x_left, y(tick), x_right, y(tick), "grid");
    canvas.text(x_left - 6, y(tick) + 4, format(tick), "tick", "end");
  }
  canvas.line(x_left, y.from, x_left, y.to, "axis");
  canvas.text(14, (y.from + y.to) / 2, label, "axis-label", "middle", -90);
}

void x_axis(Canvas& canvas, const Scale& x, double y_bottom, double y_top, const std::string& label,
            std::string (*format)(double)) {
  x_axis_at(canvas, x, x.ticks(), y_bottom, y_top, label, format);
}

void x_axis_at(Canvas& canvas, const Scale& x, const std::vector<double>& ticks, double y_bottom, double y_top,
               const std::string& label, std::string (*format)(double)) {
  for (double tick : ticks) {
    canvas.line(x(tick), y_bottom, x(tick), y_top, "grid");
    canvas.text(x(tick), y_bottom + 16, format(tick), "tick", "middle");
  }
  canvas.line(x.from, y_bottom, x.to, y_bottom, "axis");
  canvas.text((x.from + x.to) / 2, y_bottom + 34, label, "axis-label", "middle");
}

void x_categories(Canvas& canvas, const std::vector<std::pair<double, std::string>>& ticks, double y_bottom) {
  for (const auto& [x, name] : ticks) {
    canvas.line(x, y_bottom, x, y_bottom + 4, "axis");
    canvas.text(x, y_bottom + 16, name, "tick", "middle");
  }
}

void legend(Canvas& canvas, double x, double y, const std::vector<std::pair<std::string, std::string>>& name_and_color) {
  for (const auto& [name, color] : name_and_color) {
    canvas.rect(x, y - 9, 10, 10, color, "swatch");
    canvas.text(x + 14, y, name, "legend");
    x += 24 + 7.0 * static_cast<double>(name.size());
  }
}

}  // namespace pb::report::svg
