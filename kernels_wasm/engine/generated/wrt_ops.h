/* GENERATED from python_ref/opdefs.py by tools/gen_schema.py (tools/gen_c_tables.py): do not edit.
 * The op set of the .wrt format as the C engine reads it: op codes and arity, the union Options type
 * ids, each options table's FlatBuffers fields (slot = declaration index, vtable entry at byte
 * 4 + 2 * slot; kind; default), attribute names and enum ranges. Regenerate: python tools/gen_schema.py
 * The tables are defined where WRT_OPS_DEFINE_TABLES is defined (support.c, after engine.h). */
#ifndef WRT_GENERATED_OPS_H
#define WRT_GENERATED_OPS_H

#include <stdint.h>

/* enum OpType */
enum {
  OP_CONV_2D = 1,
  OP_CONV_TRANSPOSE_2D = 2,
  OP_FULLY_CONNECTED = 3,
  OP_MATMUL = 4,
  OP_ADD = 10,
  OP_SUB = 11,
  OP_MUL = 12,
  OP_DIV = 13,
  OP_MAXIMUM = 14,
  OP_MINIMUM = 15,
  OP_POW = 16,
  OP_PRELU = 17,
  OP_RELU = 20,
  OP_CLIP = 21,
  OP_LEAKY_RELU = 22,
  OP_HARD_SWISH = 23,
  OP_HARD_SIGMOID = 24,
  OP_SIGMOID = 25,
  OP_TANH = 26,
  OP_EXP = 27,
  OP_SQRT = 28,
  OP_ABS = 29,
  OP_NEG = 30,
  OP_MAX_POOL_2D = 40,
  OP_AVERAGE_POOL_2D = 41,
  OP_MEAN = 42,
  OP_REDUCE_MAX = 43,
  OP_REDUCE_SUM = 44,
  OP_SOFTMAX = 45,
  OP_RESHAPE = 50,
  OP_TRANSPOSE = 51,
  OP_CONCATENATION = 52,
  OP_SLICE = 53,
  OP_PAD = 54,
  OP_RESIZE = 55,
  OP_DEPTH_TO_SPACE = 56,
  OP_GATHER = 57,
  OP_LAYER_NORM = 60,
  OP_GELU = 61,
  OP_ERF = 62,
  OP_WHERE = 63,
  OP_EXPAND = 64,
  OP_CAST = 65,
  OP_EQUAL = 66,
  OP_LESS = 67,
  OP_GREATER = 68,
  OP_LESS_EQUAL = 69,
  OP_GREATER_EQUAL = 70,
  OP_NOT = 71,
  OP_AND = 72,
  OP_OR = 73,
  OP_XOR = 74,
  OP_SCATTER_ND = 75,
  OP_SPLIT = 76,
  OP_LOG = 77,
  OP_FLOOR = 78,
  OP_CEIL = 79,
  OP_LSTM = 80,
  OP_GRU = 81,
  OP_RNN = 82,
  OP_LANDMARKS_TO_TRANSFORM_MATRIX = 85,
  OP_TRANSFORM_TENSOR_BILINEAR = 86,
  OP_TRANSFORM_LANDMARKS = 87,
  OP_QUANTIZE = 100,
  OP_DEQUANTIZE = 101,
  OP_LOOKUP = 102,
  OP_MAX_CODE = 103 /* one past the largest op code */
};
#define WRT_NUM_OPS 66

/* union Options type ids, in schema declaration order */
enum {
  OPTIONS_NONE = 0,
  OPTIONS_Conv2DOptions = 1,
  OPTIONS_ConvTranspose2DOptions = 2,
  OPTIONS_FullyConnectedOptions = 3,
  OPTIONS_BinaryOptions = 4,
  OPTIONS_ClipOptions = 5,
  OPTIONS_LeakyReluOptions = 6,
  OPTIONS_HardSigmoidOptions = 7,
  OPTIONS_Pool2DOptions = 8,
  OPTIONS_ReduceOptions = 9,
  OPTIONS_SoftmaxOptions = 10,
  OPTIONS_ReshapeOptions = 11,
  OPTIONS_TransposeOptions = 12,
  OPTIONS_ConcatenationOptions = 13,
  OPTIONS_SliceOptions = 14,
  OPTIONS_PadOptions = 15,
  OPTIONS_ResizeOptions = 16,
  OPTIONS_DepthToSpaceOptions = 17,
  OPTIONS_GatherOptions = 18,
  OPTIONS_QuantizeOptions = 19,
  OPTIONS_LayerNormOptions = 20,
  OPTIONS_GeluOptions = 21,
  OPTIONS_ExpandOptions = 22,
  OPTIONS_CastOptions = 23,
  OPTIONS_ScatterNdOptions = 24,
  OPTIONS_SplitOptions = 25,
  OPTIONS_LstmOptions = 26,
  OPTIONS_GruOptions = 27,
  OPTIONS_RnnOptions = 28,
  OPTIONS_LandmarksToTransformMatrixOptions = 29,
  OPTIONS_TransformTensorBilinearOptions = 30,
  OPTIONS_TransformLandmarksOptions = 31,
  OPTIONS_COUNT = 32
};

/* attribute names of every options table */
enum {
  ATTR_strides = 0,
  ATTR_dilations = 1,
  ATTR_pads = 2,
  ATTR_groups = 3,
  ATTR_act_min = 4,
  ATTR_act_max = 5,
  ATTR_output_padding = 6,
  ATTR_float_output = 7,
  ATTR_min = 8,
  ATTR_max = 9,
  ATTR_alpha = 10,
  ATTR_beta = 11,
  ATTR_kernel = 12,
  ATTR_ceil_mode = 13,
  ATTR_count_include_pad = 14,
  ATTR_axes = 15,
  ATTR_keepdims = 16,
  ATTR_axis = 17,
  ATTR_shape = 18,
  ATTR_perm = 19,
  ATTR_starts = 20,
  ATTR_ends = 21,
  ATTR_steps = 22,
  ATTR_mode = 23,
  ATTR_value = 24,
  ATTR_size = 25,
  ATTR_scales = 26,
  ATTR_coord = 27,
  ATTR_nearest = 28,
  ATTR_block = 29,
  ATTR_dtype = 30,
  ATTR_epsilon = 31,
  ATTR_to = 32,
  ATTR_reduction = 33,
  ATTR_sizes = 34,
  ATTR_direction = 35,
  ATTR_activations = 36,
  ATTR_activation_alpha = 37,
  ATTR_activation_beta = 38,
  ATTR_clip = 39,
  ATTR_coupling = 40,
  ATTR_cell_clip = 41,
  ATTR_proj_clip = 42,
  ATTR_linear_before_reset = 43,
  ATTR_rotation_idx = 44,
  ATTR_target_rotation = 45,
  ATTR_subset = 46,
  ATTR_align_corners = 47,
  ATTR_dimensions = 48,
  ATTR_scale = 49,
  WRT_NUM_ATTRS = 50
};

/* enums of attributes */
enum {
  WRT_ENUM_PadMode = 0,
  WRT_ENUM_ResizeMode = 1,
  WRT_ENUM_CoordMode = 2,
  WRT_ENUM_NearestMode = 3,
  WRT_ENUM_DepthToSpaceMode = 4,
  WRT_ENUM_QuantType = 5,
  WRT_ENUM_GeluMode = 6,
  WRT_ENUM_CastTo = 7,
  WRT_ENUM_ScatterReduction = 8,
  WRT_ENUM_Direction = 9,
  WRT_ENUM_Coupling = 10,
  WRT_ENUM_Activation = 11,
  WRT_NUM_ENUMS = 12
};
enum { WRT_PadMode_CONSTANT = 0, WRT_PadMode_REFLECT = 1, WRT_PadMode_EDGE = 2 };
enum { WRT_ResizeMode_NEAREST = 0, WRT_ResizeMode_BILINEAR = 1 };
enum { WRT_CoordMode_HALF_PIXEL = 0, WRT_CoordMode_ALIGN_CORNERS = 1, WRT_CoordMode_ASYMMETRIC = 2, WRT_CoordMode_PYTORCH_HALF_PIXEL = 3, WRT_CoordMode_TF_HALF_PIXEL_FOR_NN = 4 };
enum { WRT_NearestMode_ROUND_PREFER_FLOOR = 0, WRT_NearestMode_ROUND_PREFER_CEIL = 1, WRT_NearestMode_FLOOR = 2, WRT_NearestMode_CEIL = 3 };
enum { WRT_DepthToSpaceMode_DCR = 0, WRT_DepthToSpaceMode_CRD = 1 };
enum { WRT_QuantType_INT8 = 0, WRT_QuantType_UINT8 = 1 };
enum { WRT_GeluMode_EXACT = 0, WRT_GeluMode_TANH = 1 };
enum { WRT_CastTo_FLOAT32 = 0, WRT_CastTo_FLOAT16 = 1, WRT_CastTo_INT8 = 2, WRT_CastTo_UINT8 = 3, WRT_CastTo_INT32 = 4, WRT_CastTo_INT64 = 5, WRT_CastTo_BOOL = 6 };
enum { WRT_ScatterReduction_NONE = 0, WRT_ScatterReduction_ADD = 1, WRT_ScatterReduction_MUL = 2, WRT_ScatterReduction_MAX = 3, WRT_ScatterReduction_MIN = 4 };
enum { WRT_Direction_FORWARD = 0, WRT_Direction_REVERSE = 1, WRT_Direction_BIDIRECTIONAL = 2 };
enum { WRT_Coupling_NONE = 0, WRT_Coupling_FORGET_FROM_INPUT = 1, WRT_Coupling_INPUT_FROM_FORGET = 2 };
enum { WRT_Activation_SIGMOID = 0, WRT_Activation_TANH = 1, WRT_Activation_RELU = 2, WRT_Activation_AFFINE = 3, WRT_Activation_LEAKY_RELU = 4, WRT_Activation_THRESHOLDED_RELU = 5, WRT_Activation_SCALED_TANH = 6, WRT_Activation_HARD_SIGMOID = 7, WRT_Activation_ELU = 8, WRT_Activation_SOFTSIGN = 9, WRT_Activation_SOFTPLUS = 10, WRT_Activation_RELU6 = 11, WRT_Activation_IDENTITY = 12 };

typedef enum { WRT_ATTR_INT, WRT_ATTR_FLOAT, WRT_ATTR_BOOL, WRT_ATTR_INTS, WRT_ATTR_FLOATS, WRT_ATTR_ENUM } wrt_attr_kind;

typedef struct {
  const char* name;
  uint16_t code;
  uint8_t min_in;   /* required inputs (a variadic input is required once) */
  uint8_t max_in;   /* declared inputs (trailing ones optional); variadic: the last one repeats */
  uint8_t variadic; /* any number >= min_in, all present */
  uint8_t n_out;    /* outputs; variadic_out: at least one, any number up to WRT_MAX_OP_OUTPUTS */
  uint8_t variadic_out;
  uint8_t options;  /* OPTIONS_* type id, OPTIONS_NONE for an op without attributes */
  uint16_t const_in; /* bit i: input i must be a constant (packed at load) */
  uint8_t family : 2;      /* WRT_FAMILY_* */
  uint8_t quant : 3;       /* WRT_QUANT_*: its int8 form */
  uint8_t needs_quant : 1; /* takes int8/uint8 inputs only as quantized tensors */
  int8_t unary;     /* element-wise unary op: its vector kernel WRT_UN_* (wrt_eltwise.h), else -1 */
} wrt_opdef;

/* op families (python_ref/opdefs.py OpDef.family, OpDef.quant) */
enum { WRT_FAMILY_NONE = 0, WRT_FAMILY_UNARY = 1 };
enum { WRT_QUANT_NONE = 0, WRT_QUANT_WEIGHTED = 1, WRT_QUANT_MOVES = 2, WRT_QUANT_SELECTS = 3, WRT_QUANT_ARITHMETIC = 4, WRT_QUANT_TABLE = 5, WRT_QUANT_INTEGER = 6 };
/* an int8 form computed by the op itself (not a LOOKUP made by converters) */
#define WRT_QUANT_NATIVE(q) ((q) == WRT_QUANT_WEIGHTED || (q) == WRT_QUANT_MOVES || (q) == WRT_QUANT_SELECTS || (q) == WRT_QUANT_ARITHMETIC || (q) == WRT_QUANT_INTEGER)
/* p[] = the params of an element-wise unary op's vector kernel: its float attributes, in order */
#define WRT_UNARY_PARAMS(type, a, p) \
  do { \
    switch (type) { \
      case OP_CLIP: (p)[0] = (a)->min; (p)[1] = (a)->max; break; \
      case OP_LEAKY_RELU: (p)[0] = (a)->alpha; break; \
      case OP_HARD_SIGMOID: (p)[0] = (a)->alpha; (p)[1] = (a)->beta; break; \
      default: break; \
    } \
  } while (0)
/* whether the module holds a float32 element-wise unary op (engine.h WRT_KEEP: a module built for given
 * models may have none, and leaves their path out) */
#define WRT_KEEP_UNARY_F32 (WRT_KEEP(RELU, F32) || WRT_KEEP(CLIP, F32) || WRT_KEEP(LEAKY_RELU, F32) || WRT_KEEP(HARD_SWISH, F32) || WRT_KEEP(HARD_SIGMOID, F32) || WRT_KEEP(SIGMOID, F32) || WRT_KEEP(TANH, F32) || WRT_KEEP(EXP, F32) || WRT_KEEP(SQRT, F32) || WRT_KEEP(ABS, F32) || WRT_KEEP(NEG, F32) || WRT_KEEP(GELU, F32) || WRT_KEEP(ERF, F32) || WRT_KEEP(LOG, F32) || WRT_KEEP(FLOOR, F32) || WRT_KEEP(CEIL, F32))

typedef struct {
  const char* name;          /* as in opdefs.py */
  uint8_t attr;              /* ATTR_* */
  uint8_t slot;              /* FlatBuffers field index: vtable entry at byte 4 + 2 * slot */
  uint8_t kind;              /* wrt_attr_kind */
  uint8_t size;              /* bytes of the scalar, or of one vector element */
  int8_t enum_id;            /* WRT_ENUM_* for WRT_ATTR_ENUM, else -1 */
  int32_t def_int;           /* default of an int, bool or enum field (absent = default) */
  float def_float;           /* default of a float field */
  uint8_t def_len;           /* ints/floats: default values; > 0: the vector has exactly this many */
  const int32_t* def_ints;
  const float* def_floats;
} wrt_fielddef;

typedef struct {
  const char* name;
  uint8_t n_fields;
  const wrt_fielddef* fields; /* in slot order */
} wrt_optionsdef;

typedef struct {
  const char* name;
  int32_t min, max; /* valid values */
} wrt_enumdef;

extern const wrt_opdef WRT_OPDEFS[OP_MAX_CODE];         /* by op code; name NULL for unused codes */
extern const wrt_optionsdef WRT_OPTIONS[OPTIONS_COUNT]; /* by union type id; [0] = NONE */
extern const wrt_enumdef WRT_ENUMS[WRT_NUM_ENUMS];
const wrt_opdef* wrt_opdef_of(int code);                /* NULL for unknown codes */

#endif /* WRT_GENERATED_OPS_H */

/* the tables, where engine.h (WRT_KEEP_OP: a module built for given models) is already included */
#if defined(WRT_OPS_DEFINE_TABLES) && !defined(WRT_GENERATED_OPS_TABLES)
#define WRT_GENERATED_OPS_TABLES
#include "../../generated/wrt_eltwise.h" /* WRT_UN_* */
const wrt_opdef WRT_OPDEFS[OP_MAX_CODE] = {
    [OP_CONV_2D] = {"CONV_2D", 1, 2, 4, 0, 1, 0, OPTIONS_Conv2DOptions, 6, WRT_FAMILY_NONE, WRT_QUANT_WEIGHTED, 1, -1},
    [OP_CONV_TRANSPOSE_2D] = {"CONV_TRANSPOSE_2D", 2, 2, 3, 0, 1, 0, OPTIONS_ConvTranspose2DOptions, 6, WRT_FAMILY_NONE, WRT_QUANT_WEIGHTED, 1, -1},
    [OP_FULLY_CONNECTED] = {"FULLY_CONNECTED", 3, 2, 3, 0, 1, 0, OPTIONS_FullyConnectedOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_WEIGHTED, 1, -1},
    [OP_MATMUL] = {"MATMUL", 4, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_ADD] = {"ADD", 10, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_SUB] = {"SUB", 11, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_MUL] = {"MUL", 12, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_DIV] = {"DIV", 13, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_MAXIMUM] = {"MAXIMUM", 14, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_MINIMUM] = {"MINIMUM", 15, 2, 2, 0, 1, 0, OPTIONS_BinaryOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_POW] = {"POW", 16, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_PRELU] = {"PRELU", 17, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 1, -1},
    [OP_RELU] = {"RELU", 20, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_ARITHMETIC, 0, WRT_UN_RELU},
    [OP_CLIP] = {"CLIP", 21, 1, 1, 0, 1, 0, OPTIONS_ClipOptions, 0, WRT_FAMILY_UNARY, WRT_QUANT_ARITHMETIC, 0, WRT_UN_CLIP},
    [OP_LEAKY_RELU] = {"LEAKY_RELU", 22, 1, 1, 0, 1, 0, OPTIONS_LeakyReluOptions, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_LEAKY_RELU},
    [OP_HARD_SWISH] = {"HARD_SWISH", 23, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_HARD_SWISH},
    [OP_HARD_SIGMOID] = {"HARD_SIGMOID", 24, 1, 1, 0, 1, 0, OPTIONS_HardSigmoidOptions, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_HARD_SIGMOID},
    [OP_SIGMOID] = {"SIGMOID", 25, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_SIGMOID},
    [OP_TANH] = {"TANH", 26, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_TANH},
    [OP_EXP] = {"EXP", 27, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_EXP},
    [OP_SQRT] = {"SQRT", 28, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_SQRT},
    [OP_ABS] = {"ABS", 29, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_ABS},
    [OP_NEG] = {"NEG", 30, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_TABLE, 0, WRT_UN_NEG},
    [OP_MAX_POOL_2D] = {"MAX_POOL_2D", 40, 1, 1, 0, 1, 0, OPTIONS_Pool2DOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_SELECTS, 1, -1},
    [OP_AVERAGE_POOL_2D] = {"AVERAGE_POOL_2D", 41, 1, 1, 0, 1, 0, OPTIONS_Pool2DOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 1, -1},
    [OP_MEAN] = {"MEAN", 42, 1, 1, 0, 1, 0, OPTIONS_ReduceOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 1, -1},
    [OP_REDUCE_MAX] = {"REDUCE_MAX", 43, 1, 1, 0, 1, 0, OPTIONS_ReduceOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_SELECTS, 0, -1},
    [OP_REDUCE_SUM] = {"REDUCE_SUM", 44, 1, 1, 0, 1, 0, OPTIONS_ReduceOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_SOFTMAX] = {"SOFTMAX", 45, 1, 2, 0, 1, 0, OPTIONS_SoftmaxOptions, 2, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 1, -1},
    [OP_RESHAPE] = {"RESHAPE", 50, 1, 1, 0, 1, 0, OPTIONS_ReshapeOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_TRANSPOSE] = {"TRANSPOSE", 51, 1, 1, 0, 1, 0, OPTIONS_TransposeOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_CONCATENATION] = {"CONCATENATION", 52, 1, 1, 1, 1, 0, OPTIONS_ConcatenationOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_ARITHMETIC, 0, -1},
    [OP_SLICE] = {"SLICE", 53, 1, 1, 0, 1, 0, OPTIONS_SliceOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_PAD] = {"PAD", 54, 1, 1, 0, 1, 0, OPTIONS_PadOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_RESIZE] = {"RESIZE", 55, 1, 1, 0, 1, 0, OPTIONS_ResizeOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 1, -1},
    [OP_DEPTH_TO_SPACE] = {"DEPTH_TO_SPACE", 56, 1, 1, 0, 1, 0, OPTIONS_DepthToSpaceOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_GATHER] = {"GATHER", 57, 2, 2, 0, 1, 0, OPTIONS_GatherOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_MOVES, 0, -1},
    [OP_LAYER_NORM] = {"LAYER_NORM", 60, 1, 3, 0, 1, 0, OPTIONS_LayerNormOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_GELU] = {"GELU", 61, 1, 1, 0, 1, 0, OPTIONS_GeluOptions, 0, WRT_FAMILY_UNARY, WRT_QUANT_NONE, 0, -1},
    [OP_ERF] = {"ERF", 62, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_NONE, 0, -1},
    [OP_WHERE] = {"WHERE", 63, 3, 3, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_EXPAND] = {"EXPAND", 64, 1, 1, 0, 1, 0, OPTIONS_ExpandOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_CAST] = {"CAST", 65, 1, 1, 0, 1, 0, OPTIONS_CastOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_EQUAL] = {"EQUAL", 66, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_LESS] = {"LESS", 67, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_GREATER] = {"GREATER", 68, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_LESS_EQUAL] = {"LESS_EQUAL", 69, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_GREATER_EQUAL] = {"GREATER_EQUAL", 70, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_NOT] = {"NOT", 71, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_AND] = {"AND", 72, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_OR] = {"OR", 73, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_XOR] = {"XOR", 74, 2, 2, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_SCATTER_ND] = {"SCATTER_ND", 75, 3, 3, 0, 1, 0, OPTIONS_ScatterNdOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_SPLIT] = {"SPLIT", 76, 1, 1, 0, 1, 1, OPTIONS_SplitOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_LOG] = {"LOG", 77, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_NONE, 0, -1},
    [OP_FLOOR] = {"FLOOR", 78, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_NONE, 0, -1},
    [OP_CEIL] = {"CEIL", 79, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_UNARY, WRT_QUANT_NONE, 0, -1},
    [OP_LSTM] = {"LSTM", 80, 3, 11, 0, 3, 0, OPTIONS_LstmOptions, 1934, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_GRU] = {"GRU", 81, 3, 6, 0, 2, 0, OPTIONS_GruOptions, 14, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_RNN] = {"RNN", 82, 3, 6, 0, 2, 0, OPTIONS_RnnOptions, 14, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_LANDMARKS_TO_TRANSFORM_MATRIX] = {"LANDMARKS_TO_TRANSFORM_MATRIX", 85, 1, 1, 0, 1, 0, OPTIONS_LandmarksToTransformMatrixOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_TRANSFORM_TENSOR_BILINEAR] = {"TRANSFORM_TENSOR_BILINEAR", 86, 2, 2, 0, 1, 0, OPTIONS_TransformTensorBilinearOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_TRANSFORM_LANDMARKS] = {"TRANSFORM_LANDMARKS", 87, 2, 2, 0, 1, 0, OPTIONS_TransformLandmarksOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_NONE, 0, -1},
    [OP_QUANTIZE] = {"QUANTIZE", 100, 1, 1, 0, 1, 0, OPTIONS_QuantizeOptions, 0, WRT_FAMILY_NONE, WRT_QUANT_INTEGER, 0, -1},
    [OP_DEQUANTIZE] = {"DEQUANTIZE", 101, 1, 1, 0, 1, 0, OPTIONS_NONE, 0, WRT_FAMILY_NONE, WRT_QUANT_INTEGER, 0, -1},
    [OP_LOOKUP] = {"LOOKUP", 102, 2, 2, 0, 1, 0, OPTIONS_NONE, 2, WRT_FAMILY_NONE, WRT_QUANT_INTEGER, 0, -1},
};
static const int32_t wrt_def_Conv2DOptions_strides[2] = {1, 1};
static const int32_t wrt_def_Conv2DOptions_dilations[2] = {1, 1};
static const int32_t wrt_def_Conv2DOptions_pads[4] = {0, 0, 0, 0};
static const wrt_fielddef wrt_fields_Conv2DOptions[6] = {
    {"strides", ATTR_strides, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_Conv2DOptions_strides, 0},
    {"dilations", ATTR_dilations, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_Conv2DOptions_dilations, 0},
    {"pads", ATTR_pads, 2, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 4, wrt_def_Conv2DOptions_pads, 0},
    {"groups", ATTR_groups, 3, WRT_ATTR_INT, 4, -1, 1, 0.0f, 0, 0, 0},
    {"act_min", ATTR_act_min, 4, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 5, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const int32_t wrt_def_ConvTranspose2DOptions_strides[2] = {1, 1};
static const int32_t wrt_def_ConvTranspose2DOptions_dilations[2] = {1, 1};
static const int32_t wrt_def_ConvTranspose2DOptions_pads[4] = {0, 0, 0, 0};
static const int32_t wrt_def_ConvTranspose2DOptions_output_padding[2] = {0, 0};
static const wrt_fielddef wrt_fields_ConvTranspose2DOptions[7] = {
    {"strides", ATTR_strides, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_ConvTranspose2DOptions_strides, 0},
    {"dilations", ATTR_dilations, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_ConvTranspose2DOptions_dilations, 0},
    {"pads", ATTR_pads, 2, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 4, wrt_def_ConvTranspose2DOptions_pads, 0},
    {"groups", ATTR_groups, 3, WRT_ATTR_INT, 4, -1, 1, 0.0f, 0, 0, 0},
    {"output_padding", ATTR_output_padding, 4, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_ConvTranspose2DOptions_output_padding, 0},
    {"act_min", ATTR_act_min, 5, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 6, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_FullyConnectedOptions[3] = {
    {"act_min", ATTR_act_min, 0, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 1, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
    {"float_output", ATTR_float_output, 2, WRT_ATTR_BOOL, 1, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_BinaryOptions[2] = {
    {"act_min", ATTR_act_min, 0, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 1, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ClipOptions[2] = {
    {"min", ATTR_min, 0, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"max", ATTR_max, 1, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_LeakyReluOptions[1] = {
    {"alpha", ATTR_alpha, 0, WRT_ATTR_FLOAT, 4, -1, 0, 0.01f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_HardSigmoidOptions[2] = {
    {"alpha", ATTR_alpha, 0, WRT_ATTR_FLOAT, 4, -1, 0, 0.2f, 0, 0, 0},
    {"beta", ATTR_beta, 1, WRT_ATTR_FLOAT, 4, -1, 0, 0.5f, 0, 0, 0},
};
static const int32_t wrt_def_Pool2DOptions_kernel[2] = {1, 1};
static const int32_t wrt_def_Pool2DOptions_strides[2] = {1, 1};
static const int32_t wrt_def_Pool2DOptions_dilations[2] = {1, 1};
static const int32_t wrt_def_Pool2DOptions_pads[4] = {0, 0, 0, 0};
static const wrt_fielddef wrt_fields_Pool2DOptions[8] = {
    {"kernel", ATTR_kernel, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_Pool2DOptions_kernel, 0},
    {"strides", ATTR_strides, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_Pool2DOptions_strides, 0},
    {"dilations", ATTR_dilations, 2, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_Pool2DOptions_dilations, 0},
    {"pads", ATTR_pads, 3, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 4, wrt_def_Pool2DOptions_pads, 0},
    {"ceil_mode", ATTR_ceil_mode, 4, WRT_ATTR_BOOL, 1, -1, 0, 0.0f, 0, 0, 0},
    {"count_include_pad", ATTR_count_include_pad, 5, WRT_ATTR_BOOL, 1, -1, 0, 0.0f, 0, 0, 0},
    {"act_min", ATTR_act_min, 6, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 7, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ReduceOptions[2] = {
    {"axes", ATTR_axes, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"keepdims", ATTR_keepdims, 1, WRT_ATTR_BOOL, 1, -1, 1, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_SoftmaxOptions[1] = {
    {"axis", ATTR_axis, 0, WRT_ATTR_INT, 4, -1, -1, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ReshapeOptions[1] = {
    {"shape", ATTR_shape, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_TransposeOptions[1] = {
    {"perm", ATTR_perm, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ConcatenationOptions[3] = {
    {"axis", ATTR_axis, 0, WRT_ATTR_INT, 4, -1, 0, 0.0f, 0, 0, 0},
    {"act_min", ATTR_act_min, 1, WRT_ATTR_FLOAT, 4, -1, 0, -__builtin_inff(), 0, 0, 0},
    {"act_max", ATTR_act_max, 2, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_SliceOptions[3] = {
    {"starts", ATTR_starts, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"ends", ATTR_ends, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"steps", ATTR_steps, 2, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_PadOptions[3] = {
    {"pads", ATTR_pads, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"mode", ATTR_mode, 1, WRT_ATTR_ENUM, 1, WRT_ENUM_PadMode, 0, 0.0f, 0, 0, 0},
    {"value", ATTR_value, 2, WRT_ATTR_FLOAT, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const int32_t wrt_def_ResizeOptions_size[2] = {0, 0};
static const float wrt_def_ResizeOptions_scales[2] = {0.0f, 0.0f};
static const wrt_fielddef wrt_fields_ResizeOptions[5] = {
    {"size", ATTR_size, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_ResizeOptions_size, 0},
    {"scales", ATTR_scales, 1, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 2, 0, wrt_def_ResizeOptions_scales},
    {"mode", ATTR_mode, 2, WRT_ATTR_ENUM, 1, WRT_ENUM_ResizeMode, 1, 0.0f, 0, 0, 0},
    {"coord", ATTR_coord, 3, WRT_ATTR_ENUM, 1, WRT_ENUM_CoordMode, 0, 0.0f, 0, 0, 0},
    {"nearest", ATTR_nearest, 4, WRT_ATTR_ENUM, 1, WRT_ENUM_NearestMode, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_DepthToSpaceOptions[2] = {
    {"block", ATTR_block, 0, WRT_ATTR_INT, 4, -1, 2, 0.0f, 0, 0, 0},
    {"mode", ATTR_mode, 1, WRT_ATTR_ENUM, 1, WRT_ENUM_DepthToSpaceMode, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_GatherOptions[1] = {
    {"axis", ATTR_axis, 0, WRT_ATTR_INT, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_QuantizeOptions[1] = {
    {"dtype", ATTR_dtype, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_QuantType, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_LayerNormOptions[2] = {
    {"axis", ATTR_axis, 0, WRT_ATTR_INT, 4, -1, -1, 0.0f, 0, 0, 0},
    {"epsilon", ATTR_epsilon, 1, WRT_ATTR_FLOAT, 4, -1, 0, 1e-05f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_GeluOptions[1] = {
    {"mode", ATTR_mode, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_GeluMode, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ExpandOptions[1] = {
    {"shape", ATTR_shape, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_CastOptions[1] = {
    {"to", ATTR_to, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_CastTo, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_ScatterNdOptions[1] = {
    {"reduction", ATTR_reduction, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_ScatterReduction, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_SplitOptions[2] = {
    {"axis", ATTR_axis, 0, WRT_ATTR_INT, 4, -1, 0, 0.0f, 0, 0, 0},
    {"sizes", ATTR_sizes, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_LstmOptions[8] = {
    {"direction", ATTR_direction, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_Direction, 0, 0.0f, 0, 0, 0},
    {"activations", ATTR_activations, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_alpha", ATTR_activation_alpha, 2, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_beta", ATTR_activation_beta, 3, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"clip", ATTR_clip, 4, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
    {"coupling", ATTR_coupling, 5, WRT_ATTR_ENUM, 1, WRT_ENUM_Coupling, 0, 0.0f, 0, 0, 0},
    {"cell_clip", ATTR_cell_clip, 6, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
    {"proj_clip", ATTR_proj_clip, 7, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const wrt_fielddef wrt_fields_GruOptions[6] = {
    {"direction", ATTR_direction, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_Direction, 0, 0.0f, 0, 0, 0},
    {"activations", ATTR_activations, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_alpha", ATTR_activation_alpha, 2, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_beta", ATTR_activation_beta, 3, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"clip", ATTR_clip, 4, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
    {"linear_before_reset", ATTR_linear_before_reset, 5, WRT_ATTR_BOOL, 1, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_RnnOptions[5] = {
    {"direction", ATTR_direction, 0, WRT_ATTR_ENUM, 1, WRT_ENUM_Direction, 0, 0.0f, 0, 0, 0},
    {"activations", ATTR_activations, 1, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_alpha", ATTR_activation_alpha, 2, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"activation_beta", ATTR_activation_beta, 3, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 0, 0, 0},
    {"clip", ATTR_clip, 4, WRT_ATTR_FLOAT, 4, -1, 0, __builtin_inff(), 0, 0, 0},
};
static const int32_t wrt_def_LandmarksToTransformMatrixOptions_rotation_idx[2] = {0, 0};
static const int32_t wrt_def_LandmarksToTransformMatrixOptions_size[2] = {1, 1};
static const float wrt_def_LandmarksToTransformMatrixOptions_scales[2] = {1.0f, 1.0f};
static const wrt_fielddef wrt_fields_LandmarksToTransformMatrixOptions[5] = {
    {"rotation_idx", ATTR_rotation_idx, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_LandmarksToTransformMatrixOptions_rotation_idx, 0},
    {"target_rotation", ATTR_target_rotation, 1, WRT_ATTR_FLOAT, 4, -1, 0, 0.0f, 0, 0, 0},
    {"size", ATTR_size, 2, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_LandmarksToTransformMatrixOptions_size, 0},
    {"scales", ATTR_scales, 3, WRT_ATTR_FLOATS, 4, -1, 0, 0.0f, 2, 0, wrt_def_LandmarksToTransformMatrixOptions_scales},
    {"subset", ATTR_subset, 4, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 0, 0, 0},
};
static const int32_t wrt_def_TransformTensorBilinearOptions_size[2] = {1, 1};
static const wrt_fielddef wrt_fields_TransformTensorBilinearOptions[2] = {
    {"size", ATTR_size, 0, WRT_ATTR_INTS, 4, -1, 0, 0.0f, 2, wrt_def_TransformTensorBilinearOptions_size, 0},
    {"align_corners", ATTR_align_corners, 1, WRT_ATTR_BOOL, 1, -1, 0, 0.0f, 0, 0, 0},
};
static const wrt_fielddef wrt_fields_TransformLandmarksOptions[2] = {
    {"dimensions", ATTR_dimensions, 0, WRT_ATTR_INT, 4, -1, 2, 0.0f, 0, 0, 0},
    {"scale", ATTR_scale, 1, WRT_ATTR_FLOAT, 4, -1, 0, 1.0f, 0, 0, 0},
};
const wrt_optionsdef WRT_OPTIONS[OPTIONS_COUNT] = {
    [OPTIONS_NONE] = {"NONE", 0, 0},
    [OPTIONS_Conv2DOptions] = {"Conv2DOptions", (WRT_KEEP_OP(CONV_2D)) ? 6 : 0, (WRT_KEEP_OP(CONV_2D)) ? wrt_fields_Conv2DOptions : 0},
    [OPTIONS_ConvTranspose2DOptions] = {"ConvTranspose2DOptions", (WRT_KEEP_OP(CONV_TRANSPOSE_2D)) ? 7 : 0, (WRT_KEEP_OP(CONV_TRANSPOSE_2D)) ? wrt_fields_ConvTranspose2DOptions : 0},
    [OPTIONS_FullyConnectedOptions] = {"FullyConnectedOptions", (WRT_KEEP_OP(FULLY_CONNECTED)) ? 3 : 0, (WRT_KEEP_OP(FULLY_CONNECTED)) ? wrt_fields_FullyConnectedOptions : 0},
    [OPTIONS_BinaryOptions] = {"BinaryOptions", (WRT_KEEP_OP(ADD) || WRT_KEEP_OP(SUB) || WRT_KEEP_OP(MUL) || WRT_KEEP_OP(DIV) || WRT_KEEP_OP(MAXIMUM) || WRT_KEEP_OP(MINIMUM)) ? 2 : 0, (WRT_KEEP_OP(ADD) || WRT_KEEP_OP(SUB) || WRT_KEEP_OP(MUL) || WRT_KEEP_OP(DIV) || WRT_KEEP_OP(MAXIMUM) || WRT_KEEP_OP(MINIMUM)) ? wrt_fields_BinaryOptions : 0},
    [OPTIONS_ClipOptions] = {"ClipOptions", (WRT_KEEP_OP(CLIP)) ? 2 : 0, (WRT_KEEP_OP(CLIP)) ? wrt_fields_ClipOptions : 0},
    [OPTIONS_LeakyReluOptions] = {"LeakyReluOptions", (WRT_KEEP_OP(LEAKY_RELU)) ? 1 : 0, (WRT_KEEP_OP(LEAKY_RELU)) ? wrt_fields_LeakyReluOptions : 0},
    [OPTIONS_HardSigmoidOptions] = {"HardSigmoidOptions", (WRT_KEEP_OP(HARD_SIGMOID)) ? 2 : 0, (WRT_KEEP_OP(HARD_SIGMOID)) ? wrt_fields_HardSigmoidOptions : 0},
    [OPTIONS_Pool2DOptions] = {"Pool2DOptions", (WRT_KEEP_OP(MAX_POOL_2D) || WRT_KEEP_OP(AVERAGE_POOL_2D)) ? 8 : 0, (WRT_KEEP_OP(MAX_POOL_2D) || WRT_KEEP_OP(AVERAGE_POOL_2D)) ? wrt_fields_Pool2DOptions : 0},
    [OPTIONS_ReduceOptions] = {"ReduceOptions", (WRT_KEEP_OP(MEAN) || WRT_KEEP_OP(REDUCE_MAX) || WRT_KEEP_OP(REDUCE_SUM)) ? 2 : 0, (WRT_KEEP_OP(MEAN) || WRT_KEEP_OP(REDUCE_MAX) || WRT_KEEP_OP(REDUCE_SUM)) ? wrt_fields_ReduceOptions : 0},
    [OPTIONS_SoftmaxOptions] = {"SoftmaxOptions", (WRT_KEEP_OP(SOFTMAX)) ? 1 : 0, (WRT_KEEP_OP(SOFTMAX)) ? wrt_fields_SoftmaxOptions : 0},
    [OPTIONS_ReshapeOptions] = {"ReshapeOptions", (WRT_KEEP_OP(RESHAPE)) ? 1 : 0, (WRT_KEEP_OP(RESHAPE)) ? wrt_fields_ReshapeOptions : 0},
    [OPTIONS_TransposeOptions] = {"TransposeOptions", (WRT_KEEP_OP(TRANSPOSE)) ? 1 : 0, (WRT_KEEP_OP(TRANSPOSE)) ? wrt_fields_TransposeOptions : 0},
    [OPTIONS_ConcatenationOptions] = {"ConcatenationOptions", (WRT_KEEP_OP(CONCATENATION)) ? 3 : 0, (WRT_KEEP_OP(CONCATENATION)) ? wrt_fields_ConcatenationOptions : 0},
    [OPTIONS_SliceOptions] = {"SliceOptions", (WRT_KEEP_OP(SLICE)) ? 3 : 0, (WRT_KEEP_OP(SLICE)) ? wrt_fields_SliceOptions : 0},
    [OPTIONS_PadOptions] = {"PadOptions", (WRT_KEEP_OP(PAD)) ? 3 : 0, (WRT_KEEP_OP(PAD)) ? wrt_fields_PadOptions : 0},
    [OPTIONS_ResizeOptions] = {"ResizeOptions", (WRT_KEEP_OP(RESIZE)) ? 5 : 0, (WRT_KEEP_OP(RESIZE)) ? wrt_fields_ResizeOptions : 0},
    [OPTIONS_DepthToSpaceOptions] = {"DepthToSpaceOptions", (WRT_KEEP_OP(DEPTH_TO_SPACE)) ? 2 : 0, (WRT_KEEP_OP(DEPTH_TO_SPACE)) ? wrt_fields_DepthToSpaceOptions : 0},
    [OPTIONS_GatherOptions] = {"GatherOptions", (WRT_KEEP_OP(GATHER)) ? 1 : 0, (WRT_KEEP_OP(GATHER)) ? wrt_fields_GatherOptions : 0},
    [OPTIONS_QuantizeOptions] = {"QuantizeOptions", (WRT_KEEP_OP(QUANTIZE)) ? 1 : 0, (WRT_KEEP_OP(QUANTIZE)) ? wrt_fields_QuantizeOptions : 0},
    [OPTIONS_LayerNormOptions] = {"LayerNormOptions", (WRT_KEEP_OP(LAYER_NORM)) ? 2 : 0, (WRT_KEEP_OP(LAYER_NORM)) ? wrt_fields_LayerNormOptions : 0},
    [OPTIONS_GeluOptions] = {"GeluOptions", (WRT_KEEP_OP(GELU)) ? 1 : 0, (WRT_KEEP_OP(GELU)) ? wrt_fields_GeluOptions : 0},
    [OPTIONS_ExpandOptions] = {"ExpandOptions", (WRT_KEEP_OP(EXPAND)) ? 1 : 0, (WRT_KEEP_OP(EXPAND)) ? wrt_fields_ExpandOptions : 0},
    [OPTIONS_CastOptions] = {"CastOptions", (WRT_KEEP_OP(CAST)) ? 1 : 0, (WRT_KEEP_OP(CAST)) ? wrt_fields_CastOptions : 0},
    [OPTIONS_ScatterNdOptions] = {"ScatterNdOptions", (WRT_KEEP_OP(SCATTER_ND)) ? 1 : 0, (WRT_KEEP_OP(SCATTER_ND)) ? wrt_fields_ScatterNdOptions : 0},
    [OPTIONS_SplitOptions] = {"SplitOptions", (WRT_KEEP_OP(SPLIT)) ? 2 : 0, (WRT_KEEP_OP(SPLIT)) ? wrt_fields_SplitOptions : 0},
    [OPTIONS_LstmOptions] = {"LstmOptions", (WRT_KEEP_OP(LSTM)) ? 8 : 0, (WRT_KEEP_OP(LSTM)) ? wrt_fields_LstmOptions : 0},
    [OPTIONS_GruOptions] = {"GruOptions", (WRT_KEEP_OP(GRU)) ? 6 : 0, (WRT_KEEP_OP(GRU)) ? wrt_fields_GruOptions : 0},
    [OPTIONS_RnnOptions] = {"RnnOptions", (WRT_KEEP_OP(RNN)) ? 5 : 0, (WRT_KEEP_OP(RNN)) ? wrt_fields_RnnOptions : 0},
    [OPTIONS_LandmarksToTransformMatrixOptions] = {"LandmarksToTransformMatrixOptions", (WRT_KEEP_OP(LANDMARKS_TO_TRANSFORM_MATRIX)) ? 5 : 0, (WRT_KEEP_OP(LANDMARKS_TO_TRANSFORM_MATRIX)) ? wrt_fields_LandmarksToTransformMatrixOptions : 0},
    [OPTIONS_TransformTensorBilinearOptions] = {"TransformTensorBilinearOptions", (WRT_KEEP_OP(TRANSFORM_TENSOR_BILINEAR)) ? 2 : 0, (WRT_KEEP_OP(TRANSFORM_TENSOR_BILINEAR)) ? wrt_fields_TransformTensorBilinearOptions : 0},
    [OPTIONS_TransformLandmarksOptions] = {"TransformLandmarksOptions", (WRT_KEEP_OP(TRANSFORM_LANDMARKS)) ? 2 : 0, (WRT_KEEP_OP(TRANSFORM_LANDMARKS)) ? wrt_fields_TransformLandmarksOptions : 0},
};
const wrt_enumdef WRT_ENUMS[WRT_NUM_ENUMS] = {
    [WRT_ENUM_PadMode] = {"PadMode", 0, 2},
    [WRT_ENUM_ResizeMode] = {"ResizeMode", 0, 1},
    [WRT_ENUM_CoordMode] = {"CoordMode", 0, 4},
    [WRT_ENUM_NearestMode] = {"NearestMode", 0, 3},
    [WRT_ENUM_DepthToSpaceMode] = {"DepthToSpaceMode", 0, 1},
    [WRT_ENUM_QuantType] = {"QuantType", 0, 1},
    [WRT_ENUM_GeluMode] = {"GeluMode", 0, 1},
    [WRT_ENUM_CastTo] = {"CastTo", 0, 6},
    [WRT_ENUM_ScatterReduction] = {"ScatterReduction", 0, 4},
    [WRT_ENUM_Direction] = {"Direction", 0, 2},
    [WRT_ENUM_Coupling] = {"Coupling", 0, 2},
    [WRT_ENUM_Activation] = {"Activation", 0, 12},
};
#endif /* WRT_OPS_DEFINE_TABLES */
