"""onnxruntime's side: an InferenceSession on the same ONNX file as
Lockstep, with its own greedy loop over past/present."""
import time

import numpy as np


class Ort:
    """An InferenceSession on one graph, CPU, `threads` intra-op threads
    (`spin`: whether its pool threads spin between ops, its default), and
    its greedy loop over past/present."""

    def __init__(self, path, threads, spin=True):
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = threads
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        if not spin:
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
        self.sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
        self.inputs = self.sess.get_inputs()
        self.outputs = [o.name for o in self.sess.get_outputs()]
        self.past = [i for i in self.inputs if i.name.startswith("past")]

    def empty_past(self, batch):
        """The past of `batch` sequences with no positions yet."""
        return {i.name: np.zeros((batch, i.shape[1], 0, i.shape[3]), np.float32) for i in self.past}

    def step(self, ids, start, past):
        """One forward of `ids` [batch, s] at positions start.. over
        `past`: the greedy next tokens and the new past (the presents)."""
        b, s = ids.shape
        feed = {"input_ids": ids, "position_ids": np.tile(np.arange(start, start + s, dtype=np.int64), (b, 1))}
        feed.update(past)
        out = self.sess.run(None, feed)
        new_past = {}
        for name, v in zip(self.outputs[1:], out[1:]):
            new_past[name.replace("present", "past", 1)] = v
        return out[0][:, -1, :].argmax(-1).astype(np.int64), new_past

    def prefill(self, prompts):
        """Seconds for each prompt (batch 1, past 0), after one untimed."""
        self.step(prompts[:1], 0, self.empty_past(1))
        secs = []
        for p in prompts[1:]:
            t = time.perf_counter()
            self.step(p[None, :], 0, self.empty_past(1))
            secs.append(time.perf_counter() - t)
        return secs

    def decode(self, prompts, steps):
        """Seconds of `steps` - 1 greedy decode steps over one batch of the
        prompts (the prefill, which samples the first of `steps` tokens,
        untimed), after one untimed run of two steps; and the `steps`
        tokens generated."""
        for n in (2, steps):
            tok, past = self.step(prompts, 0, self.empty_past(len(prompts)))
            generated = [tok]
            t = time.perf_counter()
            for k in range(n - 1):
                tok, past = self.step(tok[:, None], prompts.shape[1] + k, past)
                generated.append(tok)
            secs = time.perf_counter() - t
        return secs, np.stack(generated, 1)
