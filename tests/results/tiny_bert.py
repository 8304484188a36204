"""A tiny randomly initialised BERT saved with `save_pretrained`, with a small WordPiece vocabulary:
a real local model directory for the BERTScore tests (nothing is downloaded)."""

from pathlib import Path

WORDS = ("the a of and in is to with left right lesion stroke tumor infarct acute chronic mri "
         "flair multiple sclerosis glioma diagnosis differential white matter enhancing mass "
         "edema hemorrhage encephalitis lymphoma abscess migraine").split()


def tiny_bert(folder: Path, seed: int = 0) -> Path:
    """Write the model, its config and tokenizer into `folder` and return it."""
    import torch
    from transformers import BertConfig, BertModel, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    letters = "abcdefghijklmnopqrstuvwxyz0123456789"
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *".,;:()-/", *WORDS, *letters,
             *(f"##{c}" for c in letters)]
    (folder / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=len(vocab), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=256)
    BertModel(config).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt"), model_max_length=256).save_pretrained(folder)
    return folder
