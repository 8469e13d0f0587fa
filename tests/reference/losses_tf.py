"""losses_tf.py: prints the TensorFlow values pasted into tests/framework/test_losses.c
(marked "TF 2.21" there): tf.nn.softmax_cross_entropy_with_logits,
tf.nn.sparse_softmax_cross_entropy_with_logits and tf.nn.sigmoid_cross_entropy_with_logits
on small float64 inputs, one line per case: name, TensorFlow version, values.
Run: python3 tests/reference/losses_tf.py (tensorflow-cpu; no fixture file is written)."""
import os; os.environ["TF_CPP_MIN_LOG_LEVEL"]="3"
import numpy as np, tensorflow as tf
def p(name, t): print(name, tf.__version__, [float("%.17g"%v) for v in np.asarray(t).ravel()])
# dense
l1 = np.array([[1.,2.,3.],[1000.,1001.,1002.],[-1000.,0.,1000.]], np.float64)
z1 = np.array([[0.,0.,1.],[0.2,0.3,0.5],[1.,0.,0.]], np.float64)
p("dense_rows", tf.nn.softmax_cross_entropy_with_logits(z1, l1))
l2 = np.array([[0.5,-1.],[2.,0.25],[-0.5,3.]], np.float64)
z2 = np.array([[0.1,0.],[0.6,0.5],[0.3,0.5]], np.float64)
p("dense_axis0", tf.nn.softmax_cross_entropy_with_logits(z2, l2, axis=0))
l3 = np.arange(24, dtype=np.float64).reshape(2,3,4)*0.25 - 2
z3 = np.full((2,3,4), 0.25)
p("dense_axis1_rank3", tf.nn.softmax_cross_entropy_with_logits(z3, l3, axis=1))
p("dense_f16", tf.nn.softmax_cross_entropy_with_logits(z1.astype(np.float16)[:1], l1.astype(np.float16)[:1]))
# sparse
ls = np.array([[1.,2.,3.,4.],[1000.,0.,-1000.,500.],[0.5,0.5,0.5,0.5]], np.float64)
ys = np.array([0,3,2])
p("sparse_rows", tf.nn.sparse_softmax_cross_entropy_with_logits(ys, ls))
ls3 = np.arange(12, dtype=np.float64).reshape(2,2,3)*0.5 - 1
ys3 = np.array([[0,2],[1,1]])
p("sparse_rank3", tf.nn.sparse_softmax_cross_entropy_with_logits(ys3, ls3))
try:
    tf.nn.sparse_softmax_cross_entropy_with_logits(np.array([1,12]), np.zeros((2,10)))
except Exception as e: print("sparse_err", str(e)[:300])
# sigmoid
x = np.array([-3.,-1.,0.,0.5,2.,1000.,-1000.,30.], np.float64)
z = np.array([0.,1.,0.3,1.,0.,1.,0.,0.25], np.float64)
p("sigmoid", tf.nn.sigmoid_cross_entropy_with_logits(z, x))
