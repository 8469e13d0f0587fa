/* test_mpi_app.c (under mpirun): an application that runs MPI itself hands tapeflow its
 * communicator (tfl_comm_from_mpi): tapeflow works on a duplicate, returns MPI's errors as
 * statuses with MPI's message (MPI_ERRORS_RETURN: the application's own handler is left as
 * it is), and never finalizes what the application initialised. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <string.h>

#include <cmocka.h>
#include <tapeflow/distributed_mpi.h>
#include <tapeflow/tapeflow.h>

static void test_app_comm(void **state)
{
    (void)state;
    tfl_ctx *ctx = tfl_ctx_new(NULL, NULL);
    assert_non_null(ctx);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    /* a split communicator: even and odd ranks */
    MPI_Comm half;
    assert_int_equal(MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half), MPI_SUCCESS);
    tfl_comm *c = tfl_comm_from_mpi(ctx, half, NULL);
    assert_non_null(c);
    assert_int_equal(tfl_comm_rank(c), rank / 2);
    assert_int_equal(tfl_comm_size(c), (size - rank % 2 + 1) / 2);
    double d = rank;
    assert_int_equal(tfl_comm_allreduce_doubles(c, &d, 1), TFL_OK);
    double want = 0;
    for (int r = rank % 2; r < size; r += 2)
        want += r;
    assert_true(d == want);
    tfl_comm_free(c);
    MPI_Comm_free(&half);
    /* MPI's error as a status: an invalid communicator (the world's handler set to return,
     * as the application chooses; tapeflow's calls never change it) */
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    assert_null(tfl_comm_from_mpi(ctx, MPI_COMM_NULL, NULL));
    assert_int_equal(tfl_ctx_status(ctx), TFL_UNAVAILABLE);
    assert_non_null(strstr(tfl_ctx_error(ctx).message, "MPI_Comm_dup: MPI_ERR_COMM"));
    tfl_ctx_clear_error(ctx);
    /* tfl_comm_world under an application's MPI: a duplicate of the world, nothing finalized */
    tfl_comm *w = tfl_comm_world(ctx, NULL);
    assert_non_null(w);
    assert_int_equal(tfl_comm_size(w), size);
    assert_int_equal(tfl_comm_barrier(w), TFL_OK);
    tfl_comm_free(w);
    int finalized = 1;
    MPI_Finalized(&finalized);
    assert_int_equal(finalized, 0);
    assert_int_equal(tfl_ctx_status(ctx), TFL_OK);
    tfl_ctx_free(ctx);
}

int main(int argc, char **argv)
{
    int provided;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_app_comm)};
    int failed = cmocka_run_group_tests(tests, NULL, NULL);
    int finalized = 1;
    MPI_Finalized(&finalized);
    MPI_Finalize();
    return failed || finalized;
}
