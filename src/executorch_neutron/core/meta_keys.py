"""`node.meta` keys the package writes on graph nodes and reads in another layer (torch-free: the CLI's precision
parser imports it before torch loads)."""

#: the ATen operator a node made by an ATen rewrite comes from ("aten.cosine_similarity.default"): set by the
#: passes' `fx_utils.call`, read by the quantizer's per-operator precision rules
SOURCE_OP = "executorch_neutron_source_op"

#: why an ATen rewrite left a call alone (the call is then decomposed after quantization into float CPU
#: operators): set by a pass in node.meta["custom"] (which export and decomposition carry to the pieces), read by
#: the partitioner's reason for those pieces
LEFT_FLOAT = "executorch_neutron_left_float"
