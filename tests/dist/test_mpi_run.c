/* test_mpi_run.c (under mpirun -np 2 and -np 3): a training run of the library opened by
 * every rank with the job's communicator (tfl_run_opts.comm), as an embedding application
 * does it and as `tapeflow train` does under mpirun:
 *  - every rank gets a DEVICE event naming its rank, the job size and its device;
 *  - the run trains on every rank, and every rank ends with the same variables;
 *  - rank 0 alone writes the run directory: one metrics.csv line per epoch, not one per rank;
 *  - tfl_run_evaluate gives every rank the figures of the whole data (the same on all);
 *  - a second train of the same directory resumes on every rank and trains nothing. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <tapeflow/tapeflow.h>

typedef struct seen {
    int devices;
    char device[256];
} seen;

static void on_event(void *user, const tfl_run_event *ev)
{
    seen *s = user;
    if (ev->kind == TFL_RUN_EVENT_DEVICE) {
        s->devices++;
        snprintf(s->device, sizeof s->device, "%s", ev->message);
    }
}

/* FNV-1a of the model's variables, read to the host */
static uint64_t hash_vars(tfl_model *m)
{
    tfl_tensor *v[32];
    int n = tfl_model_variables(m, TFL_VARS_ALL, v, 32);
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < n; i++) {
        size_t bytes = (size_t)tfl_tensor_numel(v[i]) * tfl_dtype_size(tfl_tensor_dtype(v[i]));
        unsigned char *p = malloc(bytes);
        assert_non_null(p);
        assert_int_equal(tfl_tensor_to_host(v[i], p, bytes), TFL_OK);
        for (size_t j = 0; j < bytes; j++)
            h = (h ^ p[j]) * 1099511628211ull;
        free(p);
    }
    return h;
}

/* every rank holds the same value (a sum and a sum of squares over the ranks) */
static void same_on_every_rank(tfl_comm *c, double v)
{
    double s[2] = {v, v * v};
    assert_int_equal(tfl_comm_allreduce_doubles(c, s, 2), TFL_OK);
    int n = tfl_comm_size(c);
    assert_true(fabs(s[0] - n * v) <= 1e-12 * fabs(v) * n);
    assert_true(fabs(s[1] * n - s[0] * s[0]) <= 1e-9 * (s[1] * n + 1e-300));
}

static int count_lines(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0, c;
    while ((c = fgetc(f)) != EOF) n += c == '\n';
    fclose(f);
    return n;
}

static void test_run_on_every_rank(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    assert_non_null(ctx);
    tfl_comm *comm = tfl_comm_world(ctx, NULL);
    assert_non_null(comm);
    int rank = tfl_comm_rank(comm), size = tfl_comm_size(comm);
    assert_true(size > 1);
    /* one directory for the job: the ranks of one host share mpirun's daemon as parent */
    char dir[256];
    snprintf(dir, sizeof dir, "/tmp/tfl-test-mpi-run-%ld", (long)getppid());
    if (rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
    }
    assert_int_equal(tfl_comm_barrier(comm), TFL_OK);

    /* one rank per GPU: a host with fewer GPUs than ranks (one fake or real GPU) trains on
     * the CPU, as a job there must be told */
    int gpus = 0;
    for (int i = 0; i < tfl_device_count(ctx); i++)
        gpus += !strncmp(tfl_device_name(ctx, i), "GPU:", 4);
    const char *sets[] = {"training.epochs=3", "training.seed=7",
                          gpus >= size ? "training.device=auto" : "training.device=CPU:0"};
    for (int pass = 0; pass < 2; pass++) {
        tfl_status st;
        tfl_config *cfg = tfl_config_load(ctx, TFL_SOURCE_DIR "/configs/xor.yaml", sets, 3, &st);
        assert_non_null(cfg);
        seen s = {0};
        tfl_run *run = tfl_run_open(
            cfg, &(tfl_run_opts){.run_dir = dir, .comm = comm, .on_event = on_event, .user = &s},
            &st);
        if (!run) print_error("rank %d: %s\n", rank, tfl_ctx_error(ctx).message);
        assert_non_null(run);
        assert_int_equal(s.devices, 1);
        char want[64];
        snprintf(want, sizeof want, "rank %d of %d (local rank", rank, size);
        assert_non_null(strstr(s.device, want));
        tfl_run_result res;
        assert_int_equal(tfl_run_train(run, &res), TFL_OK);
        assert_int_equal(res.epochs, 3);
        if (pass == 1) assert_true(res.trained_already && res.resumed);
        /* the same variables everywhere */
        same_on_every_rank(comm, (double)(hash_vars(tfl_run_model(run)) >> 11));
        /* the whole data's figures on every rank */
        double loss = NAN;
        int64_t n = 0;
        assert_int_equal(tfl_run_evaluate(run, &loss, NULL, NULL, &n), TFL_OK);
        assert_int_equal(n, 4);
        assert_true(isfinite(loss));
        same_on_every_rank(comm, loss);
        tfl_run_close(run);
        tfl_config_free(cfg);
        assert_int_equal(tfl_comm_barrier(comm), TFL_OK);
        /* rank 0 wrote: a header and one line per epoch */
        char csv[300];
        snprintf(csv, sizeof csv, "%s/metrics.csv", dir);
        assert_int_equal(count_lines(csv), 4);
    }
    assert_int_equal(tfl_comm_barrier(comm), TFL_OK);
    if (rank == 0) {
        char cmd[300];
        snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
        assert_int_equal(system(cmd), 0);
    }
    tfl_comm_free(comm);
    tfl_ctx_free(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_run_on_every_rank)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
