/*
 * configs/plot_internal.h: the curves object shared by plot_data.c (curves, loading
 * metrics.csv and event files) and plot_svg.c (drawing). Private to tapeflow.
 */
#ifndef TFL_IO_PLOT_INTERNAL_H
#define TFL_IO_PLOT_INTERNAL_H

#include "core_api/module_api.h"

#include <tapeflow/plot.h>

typedef struct tfl__point {
    double x, y;
} tfl__point;

typedef struct tfl__curve {
    char *label;
    int run;          /* index into runs: the colour */
    bool validation;  /* dashed */
    int64_t n;
    tfl__point *p;
} tfl__curve;

struct tfl_curves {
    tfl__ctx_obj obj;
    tfl_ctx *ctx;
    tfl__curve *v;
    int n, cap;
    char **runs;      /* distinct run names, in order of arrival */
    int n_runs, cap_runs;
    char metric[64];  /* of the first load ("" when curves were only added) */
    char x_label[16]; /* "epoch" or "step" from the first load */
    char *svg;
    size_t svg_len;
};

bool tfl__curves_alive(const tfl_curves *c, const char *what);

#endif /* TFL_IO_PLOT_INTERNAL_H */
