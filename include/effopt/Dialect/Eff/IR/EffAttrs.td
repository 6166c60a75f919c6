//===- EffAttrs.td - eff dialect attributes ----------------*- tablegen -*-===//

#ifndef EFFOPT_DIALECT_EFF_IR_EFFATTRS_TD
#define EFFOPT_DIALECT_EFF_IR_EFFATTRS_TD

include "effopt/Dialect/Eff/IR/EffBase.td"
include "mlir/IR/AttrTypeBase.td"

class Eff_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<Eff_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def Eff_NF4EncodingAttr : Eff_Attr<"NF4Encoding", "nf4"> {
  let summary = "tensor encoding: a frozen weight stored as 4-bit NormalFloat";
  let description = [{
    On a ranked tensor type, says that the tensor's values are not stored as
    its element type but as 4-bit NormalFloat (NF4) codes in the layout of
    bitsandbytes' `quantize_4bit(quant_type="nf4", compress_statistics=True)`
    (Dettmers et al. 2023, QLoRA). For a logical tensor of `n` elements, in
    row-major order:

    - `codes`: `tensor<ceil(n/2) x i8>`, two codes per byte, the element of
      even index in the high nibble; code `c` means the value
      `NF4[c] * absmax(block)`, NF4 being the published 16-value table;
    - `absmax`: `tensor<nb x i8>`, `nb = ceil(n / block_size)`, each block's
      absolute maximum minus `offset`, quantized blockwise (blocks of
      `nested_block_size`) to 8 bits with bitsandbytes' signed dynamic map;
    - `nested_absmax`: `tensor<ceil(nb / nested_block_size) x f32>`, the
      scale of each nested block;
    - `nested_offset`: `tensor<f32>`, the mean of the block absmax values.

    So `absmax(b) = DYN[absmax[b]] * nested_absmax[b / nested_block_size] +
    nested_offset` and element `i` is `NF4[code(i)] * absmax(i /
    block_size)`, each product and sum rounded to f32. The bytes are the
    bit patterns of bitsandbytes' uint8 tensors. Only `eff.nf4_pack` makes
    such a value, and only the weight operand of `eff.linear` reads it:
    `convert-eff-to-linalg` converts the type into its four storage tensors
    and dequantizes tile by tile inside the product.

    ```mlir
    tensor<256x64xf32, #eff.nf4<block_size = 64, nested_block_size = 256>>
    ```
  }];
  let parameters = (ins "int64_t":$block_size, "int64_t":$nested_block_size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Blocks of `block_size` (the last possibly partial) of `elements`.
    int64_t getNumBlocks(int64_t elements) const;
    /// The four storage tensor types (codes, absmax, nested_absmax,
    /// nested_offset) of a logical tensor of `elements` elements.
    void getStorageTypes(int64_t elements,
                         ::llvm::SmallVectorImpl<::mlir::Type> &types) const;
    /// Bytes of the four storage tensors, unaligned.
    int64_t getStorageBytes(int64_t elements) const;
  }];
}

#endif // EFFOPT_DIALECT_EFF_IR_EFFATTRS_TD
