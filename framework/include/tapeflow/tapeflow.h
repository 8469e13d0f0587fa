/*
 * tapeflow/tapeflow.h: the umbrella header. `#include <tapeflow/tapeflow.h>` and link
 * -ltapeflow (pkg-config tapeflow, or find_package(tapeflow) and tapeflow::tapeflow).
 */
#ifndef TAPEFLOW_TAPEFLOW_H
#define TAPEFLOW_TAPEFLOW_H

#include <tapeflow/version.h>
#include <tapeflow/base.h>
#include <tapeflow/context.h>
#include <tapeflow/device.h>
#include <tapeflow/initializer.h>
#include <tapeflow/ops.h>
#include <tapeflow/random.h>
#include <tapeflow/tensor.h>
#include <tapeflow/variable.h>
#include <tapeflow/files.h>
#include <tapeflow/checkpoint.h>
#include <tapeflow/summary.h>

#include <tapeflow/tape.h>
#include <tapeflow/optim.h>
#include <tapeflow/data.h>
#include <tapeflow/layers.h>
#include <tapeflow/model.h>
#include <tapeflow/distributed.h>
#include <tapeflow/config.h>
#include <tapeflow/events.h>
#include <tapeflow/plot.h>
#include <tapeflow/run.h>
#include <tapeflow/train_state.h>

#endif /* TAPEFLOW_TAPEFLOW_H */
