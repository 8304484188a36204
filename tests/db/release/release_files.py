"""Release files in the published Neural-MedBench shape, built here: JSON lists of cases with
data-URI pictures (a PNG labelled image/jpeg, a wide multi-panel figure over 2048 px with a red
mark, grey and colour JPEGs, a sagittal picture, a WebP), placeholder cases, Chinese prompts,
a multi-round case in the documented rounds shape, and a maintainer's answer key."""

import base64
import io
import json
from pathlib import Path

import numpy as np
from PIL import Image

PROMPT = "根据患者的症状和图片,对疾病进行诊断"
DIALOGUE = ["最可能的诊断是什么?", "结合新的检查结果,你的诊断是否改变?", "最终诊断是什么?"]
REVEALED = [None, "腰椎穿刺: 脑脊液寡克隆带阳性。", "三个月后复查MRI: 新发病灶。"]


def picture(kind: str, size: tuple[int, int], *, seed: int = 0, mode: str = "RGB") -> bytes:
    """A small noisy picture (`kind` PNG, JPEG or WEBP, `size` = (width, height)); colour
    pictures carry a pure red square in their top-left corner (a drawn arrow's colour)."""
    w, h = size
    rng = np.random.default_rng(seed)
    if mode == "L":
        pixels = rng.integers(0, 255, (h, w), dtype=np.uint8)
    else:
        pixels = rng.integers(0, 255, (h, w, 3), dtype=np.uint8)
        pixels[:20, :20] = (255, 0, 0)
    buf = io.BytesIO()
    Image.fromarray(pixels, mode).save(buf, kind)
    return buf.getvalue()


def data_uri(data: bytes, label: str) -> str:
    return f"data:{label};base64,{base64.b64encode(data).decode()}"


# The pictures, as bytes: what the study must hold, whatever the data URI said.
WIDE_PNG = picture("PNG", (2100, 400), seed=1)  # multi-panel figure, wider than 2048 px
GREY_JPEG = picture("JPEG", (64, 48), seed=2, mode="L")
COLOUR_JPEG = picture("JPEG", (60, 80), seed=3)
SAGITTAL_PNG = picture("PNG", (48, 64), seed=4)
WEBP = picture("WEBP", (40, 40), seed=5)
DIALOGUE_PNG = picture("PNG", (32, 32), seed=6)


def placeholder(case_id: str, number: int) -> dict:
    return {"case_id": case_id, "text": "", "images": [],
            "questions": [{"question_number": number, "question_text": PROMPT}]}


def direct_diagnosis() -> list[dict]:
    """Three cases and two placeholders; question numbers count through the file."""
    return [
        {"case_id": "case_1", "text": "男, 45岁, 头痛三周。\n既往体健。",
         "images": [data_uri(WIDE_PNG, "image/jpeg")],  # a PNG whose label says JPEG
         "questions": [{"question_number": 1, "question_text": PROMPT}]},
        placeholder("case_2", 2),
        {"case_id": "case_3", "text": "女, 30岁, 视物模糊。",
         "images": [data_uri(GREY_JPEG, "image/jpeg"), data_uri(COLOUR_JPEG, "image/jpeg")],
         "questions": [{"question_number": 3, "question_text": PROMPT},
                       {"question_number": 4, "question_text": "病灶位于何处?"}]},
        placeholder("case_4", 5),
        {"case_id": "case_5", "text": "男, 60岁, 步态不稳 (矢状位)。",
         "images": [data_uri(SAGITTAL_PNG, "image/png")],
         "questions": [{"question_number": 6, "question_text": PROMPT}]},
    ]


def complex_diseases() -> list[dict]:
    """`case_1` again (other content: a new case), and a placeholder."""
    return [
        {"case_id": "case_1", "text": "女, 52岁, 进行性认知下降。",
         "images": [data_uri(WEBP, "image/webp")],
         "questions": [{"question_number": 1, "question_text": PROMPT}]},
        placeholder("case_2", 2),
    ]


def multi_round() -> list[dict]:
    """One case in the documented rounds shape (questions with `information`)."""
    questions = [{"question_number": k + 1, "question_text": q}
                 | ({"information": info} if info else {})
                 for k, (q, info) in enumerate(zip(DIALOGUE, REVEALED, strict=True))]
    return [{"case_id": "case_1", "text": "女, 28岁, 右眼视力下降一周。",
             "images": [data_uri(DIALOGUE_PNG, "image/png")], "questions": questions}]


ANSWERS = {
    "direct-case_1": {"diagnosis": "胶质母细胞瘤", "differential": ["淋巴瘤", "转移瘤"],
                      "lesion": "左额叶", "reasoning": "环形强化"},
    "case_3": {"diagnosis": "视神经炎", "differential": ["缺血性视神经病变"]},  # one file only
    "case_2": {"diagnosis": "placeholder answer", "differential": []},  # placeholders: ignored
    "dialogue-case_1": {"diagnosis": "多发性硬化", "differential": ["视神经脊髓炎"]},
}


def write(path: Path, value) -> Path:
    path.write_text(json.dumps(value, ensure_ascii=False), encoding="utf-8")
    return path


def write_release(folder: Path, *, answers: bool = True) -> list[Path]:
    """The three task files (and `answers.json` beside them, kept apart from the list)."""
    folder.mkdir(parents=True, exist_ok=True)
    files = [write(folder / "direct-diagnosis.json", direct_diagnosis()),
             write(folder / "complex-diseases.json", complex_diseases()),
             write(folder / "multi-round-dialogue.json", multi_round())]
    if answers:
        write(folder / "answers.json", ANSWERS)
    return files
