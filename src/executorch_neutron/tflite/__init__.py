"""A pure int8 LiteRT (TFLite) flatbuffer writer (model builder, tensor values, the NCHW<->NHWC layout rules) and
the one reader of such files (reader.py: operator names).

Nothing here knows about FX graphs or the operator registry; the graph walk that drives the registry is convert/.
"""
