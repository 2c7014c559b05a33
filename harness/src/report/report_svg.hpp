#pragma once
// Inline SVG for the HTML report: scales, a canvas of escaped elements, axes and legends. No
// script and no external resource: the charts are plain markup, tooltips are SVG <title>s.
// Internal to the harness.

#include <string>
#include <utility>
#include <vector>

namespace pb::report::svg {

/// Maps data values to pixels along one axis, linearly or logarithmically.
struct Scale {
  double lo = 1, hi = 10;       // data range
  double from = 0, to = 100;    // pixels: `lo` maps to `from` (for a y axis, from > to)
  bool log = false;
  double operator()(double value) const;
  /// Round values inside [lo, hi] to label: decades (and 2, 5 in short log ranges), or 1-2-5 steps.
  std::vector<double> ticks() const;
};

/// A log-scale range covering `values` (positive ones; NaNs ignored), widened by `margin` (a
/// factor, e.g. 1.3) on both ends and at least `min_span` wide (a factor). {1, 10} when empty.
std::pair<double, double> log_range(const std::vector<double>& values, double margin = 1.3, double min_span = 4);

using Point = std::pair<double, double>;

/// One <svg> element built up shape by shape. Every text is escaped.
class Canvas {
 public:
  /// `label` is read by screen readers and names the chart in the page structure.
  Canvas(int width, int height, const std::string& css_class, const std::string& label);
  int width() const { return width_; }
  int height() const { return height_; }

  void line(double x1, double y1, double x2, double y2, const std::string& css_class, const std::string& stroke = "");
  void rect(double x, double y, double w, double h, const std::string& fill, const std::string& css_class = "",
            const std::string& tooltip = "");
  /// A data point with its tooltip; class "point" for result rows (what tests count), "sample"
  /// for single repetitions.
  void point(double x, double y, const std::string& fill, const std::string& tooltip, double radius = 4.5,
             const std::string& css_class = "point");
  /// A line through `points` (none when fewer than two); css_class "series", "series dashed", ...
  void polyline(const std::vector<Point>& points, const std::string& stroke, const std::string& css_class = "series");
  /// A vertical (or horizontal) interval with end caps, e.g. a confidence interval.
  void error_bar(double x1, double y1, double x2, double y2, const std::string& stroke);
  void text(double x, double y, const std::string& text, const std::string& css_class = "",
            const std::string& anchor = "start", double rotate = 0);
  std::string str() const;

 private:
  int width_, height_;
  std::string body_;
  std::string open_;
};

/// Horizontal grid lines and labels at y's ticks, from x_left to x_right, and a rotated label.
void y_axis(Canvas& canvas, const Scale& y, double x_left, double x_right, const std::string& label,
            std::string (*format)(double));
/// Vertical grid lines and labels at x's ticks, below y_bottom, and a label under them.
void x_axis(Canvas& canvas, const Scale& x, double y_bottom, double y_top, const std::string& label,
            std::string (*format)(double));
/// The same at the given ticks (a count axis, whose ticks must be whole numbers).
void x_axis_at(Canvas& canvas, const Scale& x, const std::vector<double>& ticks, double y_bottom, double y_top,
               const std::string& label, std::string (*format)(double));
/// Named positions along the x axis (categories), labels under y_bottom.
void x_categories(Canvas& canvas, const std::vector<std::pair<double, std::string>>& ticks, double y_bottom);
/// A row of colored swatches with names, starting at (x, y).
void legend(Canvas& canvas, double x, double y, const std::vector<std::pair<std::string, std::string>>& name_and_color);

}  // namespace pb::report::svg
