"""A pure int8 LiteRT (TFLite) flatbuffer writer: model builder, tensor values and the NCHW<->NHWC layout rules.

Nothing here knows about FX graphs or the operator registry; the graph walk that drives the registry is convert/.
"""
