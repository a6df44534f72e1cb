"""plots.py - the report's pictures, drawn by gnuplot as PNG and SVG, and
what both reports (report.py, evolve_report.py) write alike.

Each picture function writes its data as plain text files next to the
pictures (NAME.dat or NAME.ALLOC.dat), a gnuplot script NAME.gp, and draws
NAME.png and NAME.svg from it, so a picture can be redrawn or restyled by
hand.  Each returns NAME (the file names without the extension) or None when
there was nothing to draw.  PlotError says why gnuplot failed or is missing.
picture() draws one and gives the Markdown that shows it; human() writes a
number of bytes for people.

Standard library only."""
import csv
import os
import shutil
import subprocess

WIDTH, HEIGHT = 960, 540
# one colour per allocator of a chart (gnuplot's own cycle repeats after 8)
COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
          "#7f7f7f", "#bcbd22", "#17becf", "#000080", "#808000"]


def _color(i):
    return "lc rgb '%s'" % COLORS[i % len(COLORS)]


class PlotError(Exception):
    pass


def have_gnuplot():
    return shutil.which("gnuplot") is not None


def _q(s):
    """A gnuplot string literal."""
    return '"' + str(s).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _fname(name):
    """A file name part from an allocator or trace name."""
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in name)


def draw(outdir, name, body):
    """Run the gnuplot commands `body` (settings and one plot command) once
    for PNG and once for SVG: outdir/name.png and outdir/name.svg."""
    if not have_gnuplot():
        raise PlotError("gnuplot is not installed (apt-get install gnuplot-nox)")
    png = os.path.join(outdir, name + ".png")
    svg = os.path.join(outdir, name + ".svg")
    script = "\n".join([
        "set encoding utf8",
        "set terminal pngcairo size %d,%d noenhanced font 'sans,10'" % (WIDTH, HEIGHT),
        "set output %s" % _q(png),
        body,
        "set terminal svg size %d,%d noenhanced font 'sans,10' background '#ffffff'" % (WIDTH, HEIGHT),
        "set output %s" % _q(svg),
        "replot",
        "unset output", ""])
    gp = os.path.join(outdir, name + ".gp")
    with open(gp, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", gp], cwd=outdir, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True)
    if r.returncode != 0:
        raise PlotError("gnuplot failed on %s: %s" % (gp, r.stderr.strip()[-400:]))
    for p in (png, svg):
        if not os.path.exists(p) or os.path.getsize(p) == 0:
            raise PlotError("gnuplot drew nothing into %s" % p)
    return name


def memory_over_time(outdir, name, title, series):
    """Held bytes over the run for each allocator, and the bytes requested.
    series: [(allocator, path of a `dmm replay --csv` file)]."""
    plots, requested = [], None
    for alloc, path in series:
        try:
            with open(path, newline="") as f:
                rows = list(csv.DictReader(f))
        except OSError:
            continue
        if not rows:
            continue
        dat = os.path.join(outdir, "%s.%s.dat" % (name, _fname(alloc)))
        with open(dat, "w") as f:
            f.write("# op held_MiB requested_MiB\n")
            for r in rows:
                f.write("%s %.6f %.6f\n" % (r["op"], int(r["held_bytes"]) / 1048576.0,
                                            int(r["requested_bytes"]) / 1048576.0))
        if requested is None:
            requested = dat
        plots.append("%s using 1:2 with lines lw 1.5 %s title %s" % (
            _q(os.path.basename(dat)), _color(len(plots)), _q(alloc)))
    if not plots:
        return None
    plots.append("%s using 1:3 with lines lw 2.5 lc rgb 'black' dt 2 title 'requested (live bytes)'" %
                 _q(os.path.basename(requested)))
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel 'operations'", "set ylabel 'MiB'",
        "set key outside right top", "set grid",
        "plot " + ", \\\n     ".join(plots)]))


def latency_histograms(outdir, name, title, hists):
    """Per-call latency distributions on log-log axes.
    hists: [(allocator, [[low ns, count], ...])]."""
    plots = []
    for alloc, h in hists:
        if not h:
            continue
        total = float(sum(c for _, c in h)) or 1.0
        dat = os.path.join(outdir, "%s.%s.dat" % (name, _fname(alloc)))
        with open(dat, "w") as f:
            f.write("# latency_ns_low share_of_calls\n")
            for lo, c in h:
                f.write("%.3f %.9g\n" % (max(lo, 0.5), c / total))
        plots.append("%s using 1:2 with steps lw 1.5 %s title %s" % (
            _q(os.path.basename(dat)), _color(len(plots)), _q(alloc)))
    if not plots:
        return None
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel 'latency of one call, ns (log)'", "set ylabel 'share of calls (log)'",
        "set logscale xy", "set key outside right top", "set grid",
        "plot " + ", \\\n     ".join(plots)]))


def size_distribution(outdir, name, title, histogram):
    """Requests per size class.  histogram: [{"lo", "hi", "count"}] as in
    `dmm stats --json`."""
    rows = [h for h in histogram if h.get("count")]
    if not rows:
        return None
    dat = os.path.join(outdir, name + ".dat")
    with open(dat, "w") as f:
        f.write("# index count label\n")
        for i, h in enumerate(rows):
            f.write('%d %d "%s"\n' % (i, h["count"], _size_label(h["lo"], h["hi"])))
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel 'requested size (bytes)'", "set ylabel 'requests (log)'",
        "set logscale y", "set style fill solid 0.6", "set boxwidth 0.8", "set grid y",
        "set xtics rotate by -45", "unset key",
        "plot %s using 1:2:xtic(3) with boxes lc rgb '#3060a0'" % _q(os.path.basename(dat))]))


def _size_label(lo, hi):
    def h(n):
        for unit, div in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
            if n >= div and n % div == 0:
                return "%d%s" % (n // div, unit)
        return str(n)
    return "%s-%s" % (h(lo), h(hi))


def convergence(outdir, name, title, log_csv):
    """Best and mean fitness per generation of a search (dmm evolve's log.csv)."""
    try:
        with open(log_csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return None
    if not rows:
        return None
    dat = os.path.join(outdir, name + ".dat")
    with open(dat, "w") as f:
        f.write("# generation best_F mean_F\n")
        for r in rows:
            f.write("%s %s %s\n" % (r["generation"], r["best_F"], r["mean_F"]))
    d = _q(os.path.basename(dat))
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel 'generation'", "set ylabel 'fitness F (lower is better)'",
        "set key top right", "set grid",
        "plot %s using 1:2 with linespoints lw 2 pt 7 ps 0.4 title 'best F', \\\n"
        "     %s using 1:3 with linespoints lw 1.5 pt 7 ps 0.3 title 'mean F of the population'"
        % (d, d)]))


def time_memory_plane(outdir, name, title, points, xlabel="time / glibc",
                      ylabel="peak RSS / glibc"):
    """Every allocator as a point: time ratio against memory ratio.
    points: [(allocator, x, y)]."""
    points = [p for p in points if p[1] is not None and p[2] is not None]
    if not points:
        return None
    dat = os.path.join(outdir, name + ".dat")
    with open(dat, "w") as f:
        f.write("# x y label\n")
        for a, x, y in points:
            f.write('%.6f %.6f "%s"\n' % (x, y, a))
    d = _q(os.path.basename(dat))
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel %s" % _q(xlabel + " (lower is faster)"),
        "set ylabel %s" % _q(ylabel + " (lower is smaller)"),
        "set grid", "unset key", "set offsets graph 0.08, graph 0.15, graph 0.08, graph 0.08",
        "set arrow from 1, graph 0 to 1, graph 1 nohead dt 2",
        "set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2",
        "plot %s using 1:2 with points pt 7 ps 1.5 lc rgb '#c03030', \\\n"
        "     %s using 1:2:3 with labels offset 1,0.6 left" % (d, d)]))


def pareto_front(outdir, name, title, front_csv, built=None):
    """A search's Pareto front (dmm evolve --objectives: front.csv), time
    against memory as the search normalised them: the front's designs joined
    in order, the knee, the design built (built: its name), the presets
    and eq. 1's winner."""
    try:
        with open(front_csv, newline="") as f:
            rows = list(csv.DictReader(f))
    except OSError:
        return None
    front = [r for r in rows if r["kind"] in ("front", "knee")]
    if not front:
        return None
    dat = os.path.join(outdir, name + ".dat")
    with open(dat, "w") as f:
        f.write("# time memory label kind(0 front, 1 knee, 2 preset, 3 eq.1, 4 built)\n")
        for r in front:
            f.write('%s %s "%s" %d\n' % (r["time"], r["memory"], r["name"],
                                          1 if r["kind"] == "knee" else 0))
        f.write("\n\n")
        for r in rows:
            if r["kind"] in ("preset", "weighted-sum"):
                f.write('%s %s "%s" %d\n' % (r["time"], r["memory"],
                                              r["name"].upper() if r["kind"] == "preset"
                                              else "eq. 1 (best.dmm)",
                                              2 if r["kind"] == "preset" else 3))
        f.write("\n\n")
        for r in front:
            if built and r["name"] == built:
                f.write('%s %s "built: %s" 4\n' % (r["time"], r["memory"], r["name"]))
    d = _q(os.path.basename(dat))
    return draw(outdir, name, "\n".join([
        "set title %s" % _q(title),
        "set xlabel 'time T / T_KNG (lower is faster)'",
        "set ylabel 'memory M / M_LEA (lower is smaller)'",
        "set grid", "set key top right",
        "set offsets graph 0.05, graph 0.15, graph 0.08, graph 0.08",
        "plot %s index 0 using 1:2 with linespoints pt 7 lw 1.5 lc rgb '#3060c0' title 'front', \\\n"
        "     %s index 0 using ($4 == 1 ? $1 : NaN):2 with points pt 5 ps 1.8 lc rgb '#30a030' "
        "title 'knee', \\\n"
        "     %s index 1 using 1:2 with points pt 2 ps 1.2 lc rgb '#c03030' notitle, \\\n"
        "     %s index 1 using 1:2:3 with labels offset 1,0.6 left notitle, \\\n"
        "     %s index 2 using 1:2 with points pt 6 ps 2.5 lw 2 lc rgb '#000000' title 'built'"
        % (d, d, d, d, d)]))


# --------------------------------------------------------------------------
# what both reports write

def picture(plotdir, fn, name, *args):
    """Draws one picture, fn(plotdir, name, *args), into plotdir (the
    report's plots/).  Returns the Markdown lines that show it (or say why it
    was not drawn; none when there was nothing to draw) and the PlotError, or
    None."""
    os.makedirs(plotdir, exist_ok=True)
    try:
        got = fn(plotdir, name, *args)
    except PlotError as e:
        return ["", "*(picture %s not drawn: %s)*" % (name, e), ""], e
    if not got:
        return [], None
    return ["", "![%s](plots/%s.svg)" % (args[0] if args else name, got),
            "([PNG](plots/%s.png); data and gnuplot script: `plots/%s.*`)" % (got, got), ""], None


def human(n):
    """A number of bytes in B, KiB, MiB or GiB; '-' for None."""
    if n is None:
        return "-"
    neg = "-" if n < 0 else ""
    n = abs(n)
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            return "%s%.2f %s" % (neg, n / div, unit)
    return "%s%d B" % (neg, n)
