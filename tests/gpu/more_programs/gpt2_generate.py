# a randomly initialised GPT-2 (transformers) generating greedily.
# Run plain and hooked by tests/gpu/more_programs.sh.
import torch
from transformers import GPT2Config, GPT2LMHeadModel
torch.manual_seed(0)
m = GPT2LMHeadModel(GPT2Config(n_layer=4, n_head=8, n_embd=256, vocab_size=5000)).cuda().eval()
ids = torch.randint(0, 5000, (4, 16), device='cuda')
with torch.no_grad():
    out = m.generate(ids, max_new_tokens=32, do_sample=False, pad_token_id=0)
print("gpt2", tuple(out.shape), out[0, -5:].tolist())
