"""Edge subgraph -> int8 LiteRT (TFLite) flatbuffer: model builder, layout rules, conversion context."""
