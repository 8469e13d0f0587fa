/*
 * optim/schedule.c: learning-rate schedules, a factor of the step (optim.h has the
 * formulas). Computed in double on the host once per apply.
 */
#include "optim_internal.h"

#include <math.h>

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

static double decay_factor(const tfl_schedule *s, int64_t step)
{
    double d = (double)step, n = (double)s->decay_steps;
    switch (s->kind) {
    case TFL_SCHEDULE_CONSTANT: return 1.0;
    case TFL_SCHEDULE_EXPONENTIAL: return pow(s->decay_rate, d / n);
    case TFL_SCHEDULE_STEP: return pow(s->decay_rate, (double)(step / s->decay_steps));
    case TFL_SCHEDULE_COSINE: {
        double done = (d < n ? d : n) / n;
        return s->alpha + (1.0 - s->alpha) * 0.5 * (1.0 + cos(M_PI * done));
    }
    default: return NAN;
    }
}

/* The conditions tfl_optimizer_new checks one by one, with a message each (optimizer.c). */
bool tfl__schedule_valid(const tfl_schedule *s)
{
    if ((unsigned)s->kind >= TFL_SCHEDULE_KIND_COUNT) return false;
    bool rated = s->kind == TFL_SCHEDULE_EXPONENTIAL || s->kind == TFL_SCHEDULE_STEP;
    return (s->kind == TFL_SCHEDULE_CONSTANT || s->decay_steps > 0) &&
           (!rated || (isfinite(s->decay_rate) && s->decay_rate > 0)) && isfinite(s->alpha) &&
           s->warmup_steps >= 0 && isfinite(s->warmup_start_factor) && s->warmup_start_factor >= 0;
}

double tfl_schedule_value(const tfl_schedule *s, double learning_rate, int64_t step)
{
    if (!s) return step >= 0 ? learning_rate : NAN;
    if (step < 0 || !tfl__schedule_valid(s)) return NAN;
    if (step < s->warmup_steps) {
        double f0 = s->warmup_start_factor;
        return learning_rate * (f0 + (1.0 - f0) * (double)step / (double)s->warmup_steps);
    }
    return learning_rate * decay_factor(s, step - s->warmup_steps);
}
