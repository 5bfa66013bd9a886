// SPDX-License-Identifier: MIT OR GPL-2.0-only
// Draws a Timeline as SVG by hand: the picture is two to four line plots,
// a legend and some markers, which is less code than binding a plotting
// library and keeps the output a plain, diffable text file.
#include "report/timeline.h"
#include "report/units.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace gdrhook::cli {

namespace {

// Tableau 10: distinct for the common kinds of colour blindness and on
// white; the "other processes" series is grey.
const char *const palette[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd",
                               "#8c564b", "#e377c2", "#bcbd22", "#17becf", "#393b79"};
const char *const other_colour = "#7f7f7f";

constexpr double width = 1100, height = 700;
constexpr double left = 90, right_edge = 840; // plot area; legend to the right
constexpr double live_top = 70, live_bottom = 330;
constexpr double pinned_top = 390, pinned_bottom = 630;
// With samples: two smaller panels below, and a taller picture.
constexpr double rss_top = 690, rss_bottom = 870;
constexpr double fds_top = 930, fds_bottom = 1050;
constexpr double height_with_samples = 1110;

std::string escape(const std::string &text)
{
    std::string out;
    for (char c : text) {
        switch (c) {
        case '&': out += "&amp;"; break;
        case '<': out += "&lt;"; break;
        case '>': out += "&gt;"; break;
        case '"': out += "&quot;"; break;
        default: out += c;
        }
    }
    return out;
}

std::string num(double value)
{
    char text[32];
    std::snprintf(text, sizeof text, "%.1f", value);
    return text;
}

// A step of 1, 2 or 5 times a power of ten giving about @p ticks ticks.
double nice_step(double span, int ticks)
{
    if (span <= 0)
        return 1;
    double raw = span / ticks;
    double power = std::pow(10.0, std::floor(std::log10(raw)));
    for (double m : {1.0, 2.0, 5.0, 10.0})
        if (raw <= m * power)
            return m * power;
    return 10 * power;
}

std::string tick_label(double value)
{
    char text[32];
    if (value == std::floor(value))
        std::snprintf(text, sizeof text, "%.0f", value);
    else
        std::snprintf(text, sizeof text, "%g", value);
    return text;
}

const char *colour_of(const TimelineSeries &series, size_t index)
{
    return series.pid == -1 ? other_colour : palette[index % std::size(palette)];
}

// What a panel draws of each bucket.
enum class Quantity { live, pinned, rss, fds };

struct Panel {
    double top, bottom;
    const char *title;
    Quantity what;
};

bool is_sampled(Quantity what)
{
    return what == Quantity::rss || what == Quantity::fds;
}

bool has_value(const TimelineBucket &b, Quantity what)
{
    return is_sampled(what) ? b.sampled : b.touched;
}

uint64_t max_of(const TimelineBucket &b, Quantity what)
{
    switch (what) {
    case Quantity::live: return b.live_max;
    case Quantity::pinned: return b.pinned_max;
    case Quantity::rss: return b.rss_max;
    case Quantity::fds: return b.fds_max;
    }
    return 0;
}

uint64_t last_of(const TimelineBucket &b, Quantity what)
{
    switch (what) {
    case Quantity::live: return b.live_last;
    case Quantity::pinned: return b.pinned_last;
    case Quantity::rss: return b.rss_last;
    case Quantity::fds: return b.fds_last;
    }
    return 0;
}

class Plot {
public:
    Plot(const Timeline &t) : t_(t)
    {
        span_ns_ = std::max<double>(1.0, static_cast<double>(t.used_buckets) *
                                             static_cast<double>(t.bucket_ns));
        time_unit_ = time_unit_for(span_ns_);
    }

    double x_of_bucket(size_t bucket) const
    {
        double ns = static_cast<double>(bucket) * static_cast<double>(t_.bucket_ns);
        return left + (right_edge - left) * ns / span_ns_;
    }

    void axes_x(std::ostream &out, const Panel &panel) const
    {
        double span = span_ns_ / time_unit_.divisor;
        double step = nice_step(span, 8);
        for (double v = 0; v <= span * 1.0001; v += step) {
            double x = left + (right_edge - left) * v / span;
            out << "<line x1='" << num(x) << "' y1='" << num(panel.top) << "' x2='" << num(x)
                << "' y2='" << num(panel.bottom) << "' stroke='#e5e5e5'/>\n";
            out << "<text x='" << num(x) << "' y='" << num(panel.bottom + 16)
                << "' text-anchor='middle'>" << tick_label(v) << "</text>\n";
        }
        out << "<text x='" << num((left + right_edge) / 2) << "' y='" << num(panel.bottom + 34)
            << "' text-anchor='middle'>time since first event (" << time_unit_.name << ")</text>\n";
    }

    // Returns the unit (bytes, or a plain count of fds) and the axis
    // maximum it chose.
    std::pair<Unit, double> axes_y(std::ostream &out, const Panel &panel, uint64_t max_value) const
    {
        Unit unit = panel.what == Quantity::fds ? Unit{1, "descriptors"}
                                                : byte_unit_for(static_cast<double>(max_value));
        double top_value = static_cast<double>(max_value) / unit.divisor;
        double step = nice_step(top_value > 0 ? top_value : 1, 5);
        double axis_max = std::max(step, std::ceil(top_value / step) * step);
        for (double v = 0; v <= axis_max * 1.0001; v += step) {
            double y = panel.bottom - (panel.bottom - panel.top) * v / axis_max;
            out << "<line x1='" << num(left) << "' y1='" << num(y) << "' x2='" << num(right_edge)
                << "' y2='" << num(y) << "' stroke='#e5e5e5'/>\n";
            out << "<text x='" << num(left - 6) << "' y='" << num(y + 4) << "' text-anchor='end'>"
                << tick_label(v) << "</text>\n";
        }
        out << "<text transform='translate(" << num(left - 56) << ","
            << num((panel.top + panel.bottom) / 2) << ") rotate(-90)' text-anchor='middle'>"
            << unit.name << "</text>\n";
        out << "<rect x='" << num(left) << "' y='" << num(panel.top) << "' width='"
            << num(right_edge - left) << "' height='" << num(panel.bottom - panel.top)
            << "' fill='none' stroke='#444'/>\n";
        out << "<text x='" << num(left) << "' y='" << num(panel.top - 8) << "' class='panel'>"
            << panel.title << "</text>\n";
        return {unit, axis_max * unit.divisor};
    }

    // A step line through each bucket's maximum, carrying the last value
    // across buckets without events (or samples).
    void series_line(std::ostream &out, const Panel &panel, const TimelineSeries &series,
                     const char *colour, double axis_max) const
    {
        auto y_of = [&](uint64_t value) {
            return panel.bottom -
                   (panel.bottom - panel.top) * static_cast<double>(value) / axis_max;
        };
        std::ostringstream path;
        bool started = false;
        uint64_t carried = 0;
        for (size_t i = 0; i < t_.used_buckets; ++i) {
            const TimelineBucket &b = series.buckets[i];
            const bool has = has_value(b, panel.what);
            if (!started && !has)
                continue;
            uint64_t value = has ? max_of(b, panel.what) : carried;
            if (has)
                carried = last_of(b, panel.what);
            double x = x_of_bucket(i);
            if (!started) {
                path << "M" << num(x) << "," << num(y_of(value));
                started = true;
            } else {
                path << "H" << num(x) << "V" << num(y_of(value));
            }
            // A bucket that ended lower than its peak drops before the next.
            path << "H" << num(x_of_bucket(i + 1)) << "V" << num(y_of(carried));
        }
        if (started)
            out << "<path d='" << path.str() << "' fill='none' stroke='" << colour
                << "' stroke-width='1.8' stroke-linejoin='round'/>\n";
    }

    void free_ticks(std::ostream &out, const Panel &panel, const TimelineSeries &series,
                    const char *colour, size_t row) const
    {
        // A short tick per bucket with frees, one row per process, along the
        // bottom of the panel; the exact count is in the tooltip.
        double y = panel.bottom - 4 - 7.0 * static_cast<double>(row);
        for (size_t i = 0; i < t_.used_buckets; ++i) {
            const TimelineBucket &b = series.buckets[i];
            if (!b.frees)
                continue;
            double x = (x_of_bucket(i) + x_of_bucket(i + 1)) / 2;
            out << "<line x1='" << num(x) << "' y1='" << num(y - 5) << "' x2='" << num(x)
                << "' y2='" << num(y) << "' stroke='" << colour << "' stroke-width='1.5'><title>"
                << b.frees << " free(s)</title></line>\n";
        }
    }

    void revoke_marks(std::ostream &out, const Panel &panel, const TimelineSeries &series,
                      const char *colour) const
    {
        for (size_t i = 0; i < t_.used_buckets; ++i) {
            const TimelineBucket &b = series.buckets[i];
            if (!b.revokes)
                continue;
            double x = (x_of_bucket(i) + x_of_bucket(i + 1)) / 2;
            double y = panel.top + 4;
            out << "<path d='M" << num(x - 5) << "," << num(y) << "H" << num(x + 5) << "L" << num(x)
                << "," << num(y + 9) << "Z' fill='" << colour
                << "' stroke='#000' stroke-width='0.8'><title>" << b.revokes
                << " revocation(s)</title></path>\n";
        }
    }

private:
    const Timeline &t_;
    double span_ns_;
    Unit time_unit_;
};

void legend(std::ostream &out, const Timeline &t)
{
    double x = right_edge + 24, y = live_top + 4;
    out << "<text x='" << num(x) << "' y='" << num(y) << "' class='panel'>processes</text>\n";
    y += 20;
    for (size_t i = 0; i < t.series.size(); ++i) {
        const TimelineSeries &s = t.series[i];
        out << "<line x1='" << num(x) << "' y1='" << num(y - 4) << "' x2='" << num(x + 24)
            << "' y2='" << num(y - 4) << "' stroke='" << colour_of(s, i)
            << "' stroke-width='2.5'/>\n";
        out << "<text x='" << num(x + 32) << "' y='" << num(y) << "'>" << escape(s.label)
            << "</text>\n";
        y += 18;
    }
    y += 14;
    out << "<text x='" << num(x) << "' y='" << num(y) << "' class='panel'>markers</text>\n";
    y += 20;
    out << "<line x1='" << num(x + 12) << "' y1='" << num(y - 10) << "' x2='" << num(x + 12)
        << "' y2='" << num(y - 1) << "' stroke='#444' stroke-width='1.5'/>\n";
    out << "<text x='" << num(x + 32) << "' y='" << num(y)
        << "'>free (a tick per time step)</text>\n";
    y += 20;
    out << "<path d='M" << num(x + 7) << "," << num(y - 10) << "H" << num(x + 17) << "L"
        << num(x + 12) << "," << num(y - 1)
        << "Z' fill='#999' stroke='#000' stroke-width='0.8'/>\n";
    out << "<text x='" << num(x + 32) << "' y='" << num(y) << "'>revocation</text>\n";
    y += 26;
    out << "<text x='" << num(x) << "' y='" << num(y)
        << "' class='note'>lines: highest value</text>\n";
    out << "<text x='" << num(x) << "' y='" << num(y + 14) << "' class='note'>in each time step of "
        << escape(format_duration_ns(static_cast<double>(t.bucket_ns))) << "</text>\n";
}

} // namespace

std::string render_timeline_svg(const Timeline &t, const SvgOptions &options)
{
    std::ostringstream out;
    const bool samples = t.samples != 0;
    const double picture_height = samples ? height_with_samples : height;
    out << "<?xml version='1.0' encoding='UTF-8'?>\n"
        << "<svg xmlns='http://www.w3.org/2000/svg' width='" << width << "' height='"
        << picture_height << "' viewBox='0 0 " << width << ' ' << picture_height
        << "' font-family='sans-serif' font-size='12'>\n"
        << "<style>.title{font-size:16px;font-weight:bold}.panel{font-weight:bold}"
           ".note{fill:#555;font-size:11px}</style>\n"
        << "<rect width='100%' height='100%' fill='white'/>\n";
    out << "<text x='" << num(left) << "' y='26' class='title'>" << escape(options.title)
        << "</text>\n";
    std::string files;
    for (const auto &f : options.files)
        files += (files.empty() ? "" : ", ") + f;
    if (files.size() > 150)
        files = files.substr(0, 147) + "...";
    out << "<text x='" << num(left) << "' y='44' class='note'>" << escape(files) << "</text>\n";

    bool empty = t.used_buckets == 0 || t.series.empty();
    Plot plot(t);
    Panel live{live_top, live_bottom, "live GPU memory", Quantity::live};
    Panel pinned{pinned_top, pinned_bottom, "pinned memory", Quantity::pinned};
    std::vector<Panel> panels{live, pinned};
    if (samples) {
        panels.push_back(
            {rss_top, rss_bottom, "process memory (resident, sampled)", Quantity::rss});
        panels.push_back({fds_top, fds_bottom, "open file descriptors (sampled)", Quantity::fds});
    }
    for (const Panel &panel : panels) {
        uint64_t highest = 0;
        for (const auto &s : t.series)
            for (const auto &b : s.buckets)
                highest = std::max(highest, max_of(b, panel.what));
        auto [unit, axis_max] = plot.axes_y(out, panel, highest);
        (void)unit;
        plot.axes_x(out, panel);
        if (empty)
            continue;
        for (size_t i = 0; i < t.series.size(); ++i)
            plot.series_line(out, panel, t.series[i], colour_of(t.series[i], i), axis_max);
    }
    if (empty) {
        out << "<text x='" << num((left + right_edge) / 2) << "' y='"
            << num((live_top + live_bottom) / 2)
            << "' text-anchor='middle' class='title'>no memory events in these logs</text>\n";
    } else {
        for (size_t i = 0; i < t.series.size(); ++i) {
            const char *colour = colour_of(t.series[i], i);
            plot.free_ticks(out, live, t.series[i], colour, i);
            plot.revoke_marks(out, pinned, t.series[i], colour);
        }
        legend(out, t);
    }
    out << "</svg>\n";
    return out.str();
}

} // namespace gdrhook::cli
