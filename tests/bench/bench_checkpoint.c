/*
 * bench_checkpoint.c: saving and restoring about 100 MB of variables (25 float32 variables of
 * 1M elements; --quick: 2 of 1M, 8 MB) with tfl_ckpt_save / tfl_ckpt_restore, fsync on,
 * beside a raw write (write + fsync) and read of the same bytes; the peak RSS the save adds
 * (VmHWM, reset through /proc/self/clear_refs before the save, minus VmRSS before it). Its
 * twin is torch_checkpoint.py (torch.save/load, safetensors save_file/load_file, raw).
 * Prints `bench <name> <value> <unit>`; reads are from the page cache in every program.
 * Usage: bench_checkpoint [--quick] [--dir DIR] (DIR: where the files go, default ".").
 */
#define BENCH_NAME "bench_checkpoint"
#include "bench_util.h"

#include <fcntl.h>
#include <string.h>
#include <unistd.h>

enum { ELEMS = 1 << 20, REPS = 3 };

static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n)) kb = atol(line + n + 1);
    if (f) fclose(f);
    return kb;
}

static void reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (f) {
        fputs("5", f);
        fclose(f);
    }
}

int main(int argc, char **argv)
{
    int nvars = 25;
    const char *dir = ".";
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick"))
            nvars = 2;
        else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
            dir = argv[++i];
    }
    tfl_ctx *ctx = tfl_ctx_new(&(tfl_ctx_opts){.num_threads = 1}, NULL);
    tfl_tensor *v[32];
    for (int i = 0; i < nvars; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer_%02d/kernel", i);
        v[i] = tfl_variable_new_init(
            ctx, TFL_DTYPE_FLOAT32, 1, (int64_t[]){ELEMS},
            &(tfl_initializer){
                .kind = TFL_INIT_RANDOM_UNIFORM, .a = -1, .b = 1, .seed = (uint64_t)i + 1},
            &(tfl_variable_opts){.name = name});
        check(ctx, "variables");
    }
    double mb = (double)nvars * ELEMS * 4 / 1e6;
    char path[4096], raw[4096];
    snprintf(path, sizeof path, "%s/bench_ckpt.safetensors", dir);
    snprintf(raw, sizeof raw, "%s/bench_ckpt.raw", dir);
    double t_save[REPS], t_rest[REPS], t_raw_w[REPS], t_raw_r[REPS];
    long extra_kb = 0;
    char *buf = malloc((size_t)ELEMS * 4);
    for (int r = 0; r < REPS; r++) {
        /* raw: the same bytes, one write per variable, fsync. A variable on a GPU is copied
         * to host memory first, as the save does; tfl_tensor_data_ptr is a device address
         * there, never readable by write() */
        double t0 = now_ns();
        int fd = open(raw, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        for (int i = 0; i < nvars; i++) {
            const void *src = tfl_tensor_data_ptr(v[i]);
            if (strcmp(tfl_tensor_device(v[i]), "CPU:0") != 0) {
                check_status(ctx, tfl_tensor_to_host(v[i], buf, (size_t)ELEMS * 4), "raw copy");
                src = buf;
            }
            if (write(fd, src, (size_t)ELEMS * 4) != (ssize_t)ELEMS * 4)
                die(ctx, "raw write", "short write");
        }
        if (fsync(fd) != 0 || close(fd) != 0) die(ctx, "raw write", "fsync/close");
        t_raw_w[r] = now_ns() - t0;
        t0 = now_ns();
        fd = open(raw, O_RDONLY);
        for (int i = 0; i < nvars; i++)
            if (read(fd, buf, (size_t)ELEMS * 4) != (ssize_t)ELEMS * 4)
                die(ctx, "raw read", "short read");
        close(fd);
        t_raw_r[r] = now_ns() - t0;

        long before = status_kb("VmRSS:");
        reset_peak();
        t0 = now_ns();
        check_status(ctx, tfl_ckpt_save(ctx, path, nvars, NULL, (const tfl_tensor *const *)v, NULL),
                     "save");
        t_save[r] = now_ns() - t0;
        long peak = status_kb("VmHWM:");
        if (peak - before > extra_kb) extra_kb = peak - before;
        t0 = now_ns();
        check_status(ctx, tfl_ckpt_restore(ctx, path, nvars, v, NULL, NULL), "restore");
        t_rest[r] = now_ns() - t0;
    }
    free(buf);
    unlink(raw);
    unlink(path);
    printf("bench ckpt_bytes %.1f MB\n", mb);
    printf("bench ckpt_raw_write %.1f MB/s\n", mb / (median(t_raw_w, REPS) / 1e9));
    printf("bench ckpt_save %.1f MB/s\n", mb / (median(t_save, REPS) / 1e9));
    printf("bench ckpt_raw_read %.1f MB/s\n", mb / (median(t_raw_r, REPS) / 1e9));
    printf("bench ckpt_restore %.1f MB/s\n", mb / (median(t_rest, REPS) / 1e9));
    printf("bench ckpt_save_extra_rss %.2f MB\n", (double)extra_kb * 1024 / 1e6);
    for (int i = 0; i < nvars; i++)
        tfl_tensor_release(v[i]);
    tfl_ctx_free(ctx);
    return 0;
}
