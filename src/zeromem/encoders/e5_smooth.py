"""Smoothing factors for the int8 multilingual-e5 graph (``e5_graph.py``, ``weights="int8"``).

An int8 product with one activation scale per tensor loses precision where a few input
channels are far larger than the rest, as a transformer's are. SmoothQuant (Xiao et al. 2023,
"SmoothQuant: Accurate and Efficient Post-Training Quantization for Large Language Models")
moves that range into the weights: input channel ``j`` of a linear is divided by

    s_j = max|X_j| ** ALPHA / max|W_:j| ** (1 - ALPHA)

and the weights' column ``j`` multiplied by it, which leaves the product unchanged in exact
arithmetic. ``max|X_j|`` is measured here by running the 4-bit graph (the engine's arithmetic)
over ``CALIBRATION``, a few dozen everyday sentences in the languages the model serves, as
passages and as queries (e5's two prefixes); nothing is read from disk but the model file.
Each factor is rounded to a power of two, so multiplying by it is exact and a machine whose
kernels sum in another order almost never gets different int8 weights.

``ALPHA`` = 0.8: chosen against the 4-bit graph on 200 MemDaily messages and questions
(dev data, docs/decisions/0044-multilingual-int8.md), calibrated on ``CALIBRATION``: mean cosine 0.9975
without smoothing, 0.99950 at 0.7, 0.99953 at 0.8, 0.99938 at 0.9 (without the median
guard below: 0.99923, min 0.9932).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .e5_file import E5File
from .e5_graph import dequantized, linear_names, linear_weights

ALPHA = 0.8
FLOOR = 1e-5  # a channel that never fires, or a weight column of zeros, keeps factor ~1

# Everyday statements and questions of the kind an agent's memory holds, written for this
# module (no benchmark text): Chinese first, as the model is mostly used for it here, then
# Japanese, Korean, English, German, French, Spanish and mixed scripts.
CALIBRATION = (
    "我下周三要去上海参加一个产品发布会，大概九点出发。",
    "妈妈说她最近在学游泳，每周去两次体育馆。",
    "昨天晚上和小王一起吃了火锅，花了三百二十块钱。",
    "公司把年度总结会改到了十二月十五号下午两点。",
    "我养的两只猫一只叫豆豆，另一只叫花卷。",
    "这个季度的销售额比去年同期增长了百分之十八。",
    "记得提醒我周五之前把报销单交给财务部的李老师。",
    "他在北京大学读的是计算机专业，毕业后去了深圳工作。",
    "我们上次讨论的方案里，预算控制在五万元以内。",
    "天气预报说明天有大雨，出门记得带伞。",
    "医生建议我少吃辣的，每天至少走八千步。",
    "这本书我已经读了一半，讲的是明朝的历史。",
    "你上次说的那家咖啡店叫什么名字？",
    "我女儿的生日是几月几号？",
    "会议室的预订改到哪一天了？",
    "我们家附近新开的健身房每个月多少钱？",
    "来週の月曜日に大阪で会議があります。",
    "昨日は友達と映画を見に行きました。",
    "다음 주 금요일에 부산으로 출장을 갑니다.",
    "저는 매일 아침 일곱 시에 일어나서 운동을 해요.",
    "I moved to a new apartment near the river last month.",
    "My sister started a pottery class on Tuesday evenings.",
    "The quarterly report is due on March 31st, and Dana owns the summary.",
    "We adopted a puppy named Biscuit; she is three months old now.",
    "Remind me to renew my passport before the trip to Lisbon.",
    "What time does the pharmacy on Elm Street close on Sundays?",
    "Which restaurant did we book for the anniversary dinner?",
    "Ich treffe mich morgen mit Jonas im Büro in Berlin.",
    "Nous partons en vacances à Marseille au mois d'août.",
    "Mañana tengo una entrevista de trabajo a las diez.",
    "我在 Google Docs 里写了 Q3 的 OKR，链接发到群里了。",
    "下午 3:30 和 Alex 开会，讨论 API 的版本 2.1。",
)
PREFIXES = ("passage: ", "query: ")


def activation_ranges(tapped: Callable[[str], dict[str, np.ndarray]],
                      texts: Iterable[str] = CALIBRATION) -> dict[str, np.ndarray]:
    """Each linear's largest absolute input per channel over ``texts``, each under both of e5's
    prefixes. ``tapped(text)`` runs the tapped 4-bit graph on one text and returns
    ``{linear: its input [tokens, width]}``."""
    ranges: dict[str, np.ndarray] = {}
    for text in texts:
        for prefix in PREFIXES:
            for name, values in tapped(prefix + text).items():
                peak = np.abs(values).max(axis=0)
                ranges[name] = np.maximum(ranges[name], peak) if name in ranges else peak
    return ranges


def smoothing_factors(model: E5File, ranges: dict[str, np.ndarray],
                      alpha: float = ALPHA) -> dict[str, np.ndarray]:
    """SmoothQuant's factor for every input channel of every linear, as a power of two."""
    factors = {}
    for name in linear_names(model):
        columns = np.abs(dequantized(linear_weights(model, name))).max(axis=0)
        raw = np.maximum(ranges[name], FLOOR) ** alpha / np.maximum(columns, FLOOR) ** (1.0 - alpha)
        # a channel the calibration texts barely woke would be scaled up and become the
        # tensor's new outlier on a text that does wake it: no channel is scaled above the median
        raw = np.maximum(raw, np.median(raw))
        factors[name] = np.exp2(np.rint(np.log2(raw))).astype(np.float32)
    return factors
