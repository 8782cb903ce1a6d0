"""A pydantic-ai VCR cassette's JSON bodies as [{request, response}] records."""
import json, sys, yaml
def body(side):
    if "parsed_body" in side: return side["parsed_body"]
    b = side.get("body")
    if isinstance(b, dict): b = b.get("string")
    if isinstance(b, str):
        try: return json.loads(b)
        except ValueError: return None
    return None
for src, dst in zip(sys.argv[1::2], sys.argv[2::2]):
    doc = yaml.safe_load(open(src))
    recs = []
    for it in doc["interactions"]:
        req, resp = body(it["request"]), body(it["response"])
        if isinstance(req, dict) and isinstance(resp, dict) and ("messages" in req or "input" in req):
            recs.append({"request": req, "response": resp})
    json.dump(recs, open(dst, "w"), indent=1, ensure_ascii=False)
    print(dst, len(recs))
