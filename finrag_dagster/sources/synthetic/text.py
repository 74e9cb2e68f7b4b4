"""Text templates of the synthetic world: news titles and sentences per event type and tone.

Rules the templates obey (checked by tests/unit/test_synthetic_world.py):
* Event-type cues (seed 000 Table 5) in a title + lead sentence belong to the intended type
  only (Other/Mixed titles carry a tie between two types, or no cue at all).
* Tone is carried by plain Loughran-McDonald words: positive templates use LM-positive words
  (improved, surpassed, achieved, excellent, success, benefit, strengthen, progress ...),
  negative ones LM-negative words (decline, weak, loss, adverse, concerns, delays ...), and
  neutral ones none of either. Filler sentences are neutral.
Every number and every sentence is synthetic.
"""

from __future__ import annotations

# ------------------------------------------------------------------ shared vocabulary
PUBLISHERS = (
    ("Example Newswire", "https://www.example-news.com/articles/"),
    ("Acme Markets Daily", "https://markets.example.org/story/"),
    ("Northbridge Financial Times", "https://www.example.net/northbridge/"),
    ("Lakeside Investor", "https://lakeside.example.com/news/"),
    ("Summit Street Report", "https://www.example-news.com/summit/"),
    ("Copperfield Capital News", "https://copperfield.example.org/markets/"),
    ("Bluewater Equity Brief", "https://bluewater.example.net/brief/"),
    ("Granite Ledger", "https://www.example.com/granite-ledger/"),
)
AUTHORS = (
    "Jordan Avery",
    "Casey Morgan",
    "Riley Chen",
    "Taylor Brooks",
    "Morgan Patel",
    "Alex Rivera",
    "Sam Whitaker",
    "Jamie Okafor",
    "Drew Lindqvist",
    "Robin Takahashi",
    "Quinn Delgado",
    "Avery Novak",
)
TARGETS = (
    "Northwind Analytics",
    "Bluefin Systems",
    "Cedar Labs",
    "Harborview Networks",
    "Kestrel Devices",
    "Maplestone Software",
    "Orion Fieldworks",
    "Pinecrest Biologics",
    "Redwater Logistics",
    "Silverline Media",
    "Tidewater Foods",
    "Vantage Robotics",
)
PARTNERS = (
    "a large European carrier",
    "a major cloud provider",
    "a national retailer",
    "a global automaker",
    "a leading hospital network",
    "a federal agency",
    "a Japanese electronics group",
    "a regional bank",
)
EXECUTIVES = (
    "Dana Whitfield",
    "Marcus Ellery",
    "Priya Raman",
    "Elena Sorensen",
    "Victor Osei",
    "Hannah Kowalski",
    "Tomas Herrera",
    "Grace Liang",
    "Oliver Grant",
    "Nadia Farouk",
)
CITIES = ("Austin", "Columbus", "Phoenix", "Raleigh", "Boise", "Albany", "Tucson", "Omaha")
UNITS = ("cloud services", "consumer devices", "enterprise software", "payments", "data center", "wholesale")
PRODUCTS = ("its next-generation platform", "a new flagship product", "an updated device line", "a new service tier")
AGENCIES_POS = ("The FTC", "The DOJ", "Regulators", "A federal court")

# Subjects name the event inside later articles; each holds one cue of its type and no tone word.
SUBJECTS = {
    "Earnings & Guidance": ("latest earnings", "earnings update", "revenue outlook", "guidance update"),
    "Legal & Regulatory": ("lawsuit", "FTC review", "class action case", "DOJ review", "consent order", "compliance review"),
    "Capital & Transactions": ("acquisition plan", "share buyback", "notes offering", "dividend decision", "merger talks", "stake sale"),
    "Management & Operations": ("CEO transition", "new partnership", "product launch", "plant expansion", "supply chain update", "board changes"),
    "Other/Mixed": ("company update", "investor meeting", "strategy update", "analyst day"),
}

# ------------------------------------------------------------------ anchor titles
# Placeholders: {co} short name, {tk} ticker, {qn} "Q3", {fqs} "fiscal Q3 2021", {rev} "$7.1B",
# {eps} "$1.23", {gm} "61.2", {yoy} "12", {amt} "2.4", {pct} "8", {target}, {partner}, {exec},
# {city}, {unit}, {product}, {agency}.
QUARTERLY_TITLES = {
    1: (
        "{co} ({tk}) {qn} Earnings Beat Estimates as Margins Improved",
        "{co} Surpassed Revenue Expectations in {fqs}, Raises Outlook",
        "{co} Posts Record Quarter; Profit Surpassed Forecasts",
        "{co} Earnings: Improved Margins Drive Upside Surprise",
        "{co} Achieved Excellent Quarterly Results, EPS Tops Views",
        "{tk} Stock: {co} Delivers Excellent {fqs} Earnings",
        "{co} {qn} Revenue Rebounded, Guidance Improved",
        "{co} Reports Profitable Quarter With Greater-Than-Expected EPS",
        "{co} Earnings Outperformed Estimates on Improved Demand",
        "{co} Boosts Guidance After Successful Quarter",
    ),
    -1: (
        "{co} ({tk}) {qn} Earnings Disappoint as Margins Weaken",
        "{co} Cuts Guidance After Weak {fqs}",
        "{co} Revenue Declined in {qn}; Earnings Fall Short",
        "{co} Quarterly Results Disappoint, Weaker Outlook",
        "{co} Swings to Loss in {fqs} as Sales Slowed",
        "{co} Earnings Shortfall: EPS Below Forecast",
        "{tk} Stock: {co} Warns of Weaker Outlook After Quarter",
        "{co} {qn} Margin Deteriorated, Guidance Cut",
        "{co} Reports Disappointing Quarter, Revenue Down {yoy}%",
        "{co} Earnings Decline on Weak Demand",
    ),
    0: (
        "{co} ({tk}) Reports {fqs} Results",
        "{co} {qn} Earnings: Revenue {rev}, EPS {eps}",
        "{co} Quarterly Results in Line With Estimates",
        "{co} Posts {qn} Revenue of {rev}",
        "{co} Reaffirms Guidance With {fqs} Report",
        "{co} Earnings Match Forecasts; Outlook Unchanged",
        "What {co} Reported for the Quarter: Revenue and EPS",
        "{co} {qn} EPS of {eps} Meets Consensus",
        "{co} Releases {fqs} Earnings",
    ),
}
QUARTERLY_LEADS = {
    1: (
        "{co} reported {fqs} revenue of {rev}, up {yoy}% from a year earlier, and diluted EPS of {eps}, surpassing analyst estimates.",
        "{co} said quarterly revenue reached {rev} as gross margin improved to {gm}%, and management raised its outlook.",
        "{co} delivered an excellent quarter, with revenue of {rev} and EPS of {eps} ahead of forecasts.",
        "Revenue of {rev} and an improved gross margin of {gm}% helped {co} post a profitable {fqs}.",
    ),
    -1: (
        "{co} reported {fqs} revenue of {rev}, a decline from a year earlier, and diluted EPS of {eps}, below analyst estimates.",
        "{co} said quarterly revenue fell to {rev} as gross margin weakened to {gm}%, and management cut its outlook.",
        "{co} posted a disappointing quarter, with revenue of {rev} and EPS of {eps} short of forecasts amid weak demand.",
        "Weak demand and a lower gross margin of {gm}% left {co} with a disappointing {fqs}.",
    ),
    0: (
        "{co} reported {fqs} revenue of {rev} and diluted EPS of {eps}, in line with analyst estimates.",
        "{co} said quarterly revenue was {rev} with gross margin of {gm}%, and management kept its outlook unchanged.",
        "{co} posted revenue of {rev} and EPS of {eps} for the quarter, matching forecasts.",
        "Revenue of {rev} and a gross margin of {gm}% were close to what analysts expected for {co} in {fqs}.",
    ),
}
GUIDANCE_TITLES = {
    1: (
        "{co} Raises Full-Year Revenue Outlook on Improved Demand",
        "{co} Lifts Guidance, Citing Excellent Order Trends",
        "{co} Sees Profit Above Forecast After Successful Cost Program",
        "{co} Outlook Improved as Margin Recovery Continues",
        "{co} Boosts Revenue Forecast for the Year",
        "{co} Says Earnings Will Surpass Prior Guidance",
        "{co} Upgrades Margin Outlook, Citing Efficiencies",
        "{co} Raises Guidance After Strongest Month on Record",
    ),
    -1: (
        "{co} Lowers Full-Year Revenue Outlook on Weak Demand",
        "{co} Cuts Guidance, Citing Slowing Orders",
        "{co} Warns Earnings Will Fall Short of Forecast",
        "{co} Outlook Weakened as Margin Pressure Persists",
        "{co} Trims Revenue Forecast Amid Downturn",
        "{co} Says Earnings Will Lag Prior Guidance",
        "{co} Sees Margin Decline, Citing Adverse Costs",
        "{co} Issues Disappointing Outlook for the Year",
    ),
    0: (
        "{co} Reiterates Full-Year Revenue Outlook",
        "{co} Confirms Guidance Ahead of Investor Meeting",
        "{co} Keeps Earnings Forecast Unchanged",
        "{co} Updates Margin Outlook for the Year",
        "{co} Maintains Revenue Forecast",
        "{co} Says Earnings Guidance Stands",
        "{co} Reaffirms Annual Outlook",
        "{co} Provides Guidance Update",
    ),
}
GUIDANCE_LEADS = {
    1: (
        "{co} raised its full-year revenue outlook, citing improved demand and excellent execution.",
        "{co} said it now expects annual revenue and margin above its earlier forecast after a successful cost program.",
    ),
    -1: (
        "{co} lowered its full-year revenue outlook, citing weak demand and adverse costs.",
        "{co} said it now expects annual revenue and margin below its earlier forecast as orders slowed.",
    ),
    0: (
        "{co} reiterated its full-year revenue outlook and said its forecast is unchanged.",
        "{co} said it continues to expect annual revenue and margin within its earlier forecast range.",
    ),
}
LEGAL_TITLES = {
    1: (
        "{co} Achieves Favorable Outcome in Patent Lawsuit",
        "{co} Secures Regulatory Approval, Clearing Path for {product_t}",
        "{agency} Ends Probe of {co}; Company Cites Success",
        "{co} Resolves Lawsuit on Favorable Terms, a Win for Shareholders",
        "Court Sides With {co} in Class Action, a Positive Result",
        "{co} Achieves Compliance Milestone, Consent Order Lifted",
        "{co} Settlement Seen as Positive as Lawsuit Ends",
        "{co} Wins FTC Clearance With Improved Commitments",
        "{co} Obtains Regulatory Approval Ahead of Plan, a Success",
    ),
    -1: (
        "{co} Hit With Class Action Lawsuit Alleging Misleading Statements",
        "DOJ Opens Antitrust Investigation Into {co}",
        "{co} Faces FTC Penalty Over Data Practices",
        "{co} Receives Subpoena in Federal Investigation",
        "Regulators Fine {co} for Compliance Failures",
        "{co} Issues Recall of {product_t}",
        "{co} Loses Patent Litigation, Faces Damages",
        "{co} Hit With Enforcement Action After Adverse Ruling",
        "Court Rejects {co} Appeal in Lawsuit, an Adverse Outcome",
    ),
    0: (
        "{co} Comments on Pending FTC Review",
        "{co} Reports Request From Regulators in Ongoing Probe",
        "{co} Reaches Settlement in Patent Lawsuit",
        "FTC Review of {co} Practices Continues",
        "{co} Files Response in Class Action Case",
        "{co} Updates Investors on Regulatory Approval Timeline",
        "{co} Says Compliance Review Is Ongoing",
        "DOJ Hearing Scheduled in {co} Case",
        "{co} and Regulators Agree on Consent Order Terms",
    ),
}
LEGAL_LEADS = {
    1: (
        "{co} said the outcome of the lawsuit was favorable and would benefit its business.",
        "{co} said regulators granted the approval it sought, a success it expects to strengthen its position.",
        "{co} said the resolution of the probe was a positive result for the company and its customers.",
    ),
    -1: (
        "{co} faces a lawsuit alleging misleading statements, and the company warned of adverse effects.",
        "{co} said regulators opened an investigation, adding to concerns about penalties.",
        "{co} said the ruling was adverse and that it expects damages and delays from the litigation.",
    ),
    0: (
        "{co} said the lawsuit is ongoing and that it will respond in court.",
        "{co} said it is working with the FTC on the review and provided no further detail.",
        "{co} said the settlement terms were filed with the court this week.",
    ),
}
CAPITAL_TITLES = {
    1: (
        "{co} Announces ${amt} Billion Share Buyback, Boosting Returns",
        "{co} Raises Dividend {pct}% on Improved Cash Position",
        "{co} to Acquire {target} in Deal Expected to Strengthen Growth",
        "{co} Completes Refinancing at Attractive Rates",
        "{co} Agrees to Merger That Creates Greater Scale",
        "{co} Announces Strategic Investment to Enhance Platform",
        "{co} Unveils Repurchase Plan After Successful Divestiture",
        "{co} Completes Acquisition of {target}, Achieving Efficiencies",
        "{co} Spin-Off Expected to Benefit Shareholders",
    ),
    -1: (
        "{co} Suspends Dividend Amid Cash Concerns",
        "{co} Takeover Bid for {target} Collapses",
        "{co} Secondary Offering Raises Dilution Concerns",
        "{co} Takes On Costly Debt to Fund Acquisition",
        "{co} Terminates Merger Agreement With {target}",
        "{co} Writes Down Investment in {target} With Impairment",
        "{co} Halts Buyback as Cash Declines",
        "{co} Faces Downgrade After Debt-Funded Acquisition",
        "{co} Abandons IPO Plan for Unit After Weak Demand",
    ),
    0: (
        "{co} Announces Quarterly Dividend of ${div} per Share",
        "{co} Prices ${amt} Billion Senior Notes Offering",
        "{co} Agrees to Acquire {target} in ${amt} Billion Deal",
        "{co} Files for Spin-Off of {unit_t} Unit",
        "{co} Enters New Credit Facility to Refinance Debt",
        "{co} Takes {pct}% Stake in {target}",
        "{co} Completes Debt Refinancing",
        "{co} Sets Terms of Share Repurchase Program",
        "{co} Confirms Talks on Possible Merger With {target}",
    ),
}
CAPITAL_LEADS = {
    1: (
        "{co} said the transaction will strengthen its balance sheet and benefit shareholders.",
        "{co} said the deal is expected to improve margins and achieve cost efficiencies within two years.",
        "{co} said its improved cash position allows a greater return of capital.",
    ),
    -1: (
        "{co} said the transaction faced adverse terms, and analysts flagged concerns about its cash position.",
        "{co} said the deal was terminated after weak demand and costly financing.",
        "{co} said the decision reflects a decline in cash flow and difficult financing conditions.",
    ),
    0: (
        "{co} said the transaction is expected to close in the coming months.",
        "{co} said the terms were set by its finance committee this week.",
        "{co} said proceeds and payments will follow the schedule filed with regulators.",
    ),
}
MANAGEMENT_TITLES = {
    1: (
        "{co} Appoints Seasoned CFO to Strengthen Finance Team",
        "{co} Signs Major Partnership With {partner_t}, a Win for the Company",
        "{co} Product Launch Draws Excellent Early Reviews",
        "{co} Expands Partnership With {partner_t}, Citing Progress",
        "{co} Opens New Facility to Boost Production",
        "{co} Supply Chain Improved as Production Rebounded",
        "{co} Names New COO as Operations Improve",
        "{co} Customer Win Seen Enhancing Growth",
        "{co} CEO Transition Seen as Successful",
    ),
    -1: (
        "{co} CFO Resigns Abruptly",
        "{co} Announces Layoffs and Restructuring",
        "{co} Plant Shutdown Disrupts Production",
        "{co} Supply Chain Delays Hit Product Launch",
        "{co} CEO Departure Raises Concerns",
        "{co} Loses Key Contract With {partner_t}",
        "{co} Partnership With {partner_t} Terminated",
        "{co} Cuts Workforce in Restructuring",
        "{co} Facility Outage Halts Production; Delays Expected",
    ),
    0: (
        "{co} Appoints {exec} as Chief Operating Officer",
        "{co} Names New CFO",
        "{co} Announces Partnership With {partner_t}",
        "{co} Announces Supply Chain Agreement With {partner_t}",
        "{co} Board Adds Two Independent Directors",
        "{co} Sets Product Launch Schedule",
        "{co} to Build New Plant in {city}",
        "{co} Reorganizes Supply Chain Operations",
        "{co} Announces Management Change in {unit_t} Unit",
    ),
}
MANAGEMENT_LEADS = {
    1: (
        "{co} said the move will strengthen operations and support progress on its goals.",
        "{co} said the change follows a successful year and will enhance execution.",
        "{co} said the agreement is an excellent fit and should benefit its growth plans.",
    ),
    -1: (
        "{co} said the change would cause delays, and analysts raised concerns about execution.",
        "{co} said the disruption is adverse for near-term operations.",
        "{co} said the decision follows weak results in the unit and difficult conditions.",
    ),
    0: (
        "{co} said the change starts next month.",
        "{co} said the agreement runs for three years and gave no financial terms.",
        "{co} said the appointment was made after a search that began last year.",
    ),
}
# Other/Mixed events: a tie between two types' cues, or no cue at all.
OTHER_TITLES = {
    1: (
        "{co} Settles Lawsuit and Announces Buyback, a Positive Step",
        "{co} CEO Upbeat on Earnings and Strategy, Citing Progress",
        "{co} Shares Active After Encouraging Company Update",
        "{co} Names New CFO Amid FTC Review, Cites Stability",
        "{co} Announces Dividend and Product Launch, Citing Strength",
        "Investors Applaud {co} Strategy Update, Citing Improvement",
        "{co} Draws Optimistic Response After Analyst Meeting",
        "{co} Outlook Update Follows FTC Review, Improved Tone",
    ),
    -1: (
        "{co} Settles Lawsuit and Suspends Buyback, a Setback",
        "{co} CEO Cautious on Earnings and Strategy, Citing Challenges",
        "{co} Shares Active After Disappointing Company Update",
        "{co} Names New CFO Amid FTC Review, Concerns Persist",
        "{co} Announces Dividend and Product Launch Delay",
        "Investors Question {co} Strategy Update",
        "{co} Draws Negative Response After Analyst Meeting",
        "{co} Outlook Update Follows FTC Review, Weaker Tone",
    ),
    0: (
        "{co} Settles Lawsuit and Announces Buyback",
        "{co} CEO Comments on Earnings and Strategy",
        "{co} Shares Active After Company Update",
        "{co} Names New CFO Amid FTC Review",
        "{co} Announces Dividend and Product Launch",
        "What Investors Should Know About {co} This Week",
        "{co} Draws Attention After Analyst Meeting",
        "{co} Outlook Update Follows FTC Review",
    ),
}
OTHER_LEADS = {
    1: (
        "{co} shared an update with investors this week, and the response was encouraging.",
        "{co} presented its plans to investors, and analysts described the update as positive.",
    ),
    -1: (
        "{co} shared an update with investors this week, and the response was disappointing.",
        "{co} presented its plans to investors, and analysts described the update as negative.",
    ),
    0: (
        "{co} shared an update with investors this week.",
        "{co} presented its plans to investors at a meeting in New York.",
    ),
}

TITLES = {
    "Earnings & Guidance": GUIDANCE_TITLES,
    "Legal & Regulatory": LEGAL_TITLES,
    "Capital & Transactions": CAPITAL_TITLES,
    "Management & Operations": MANAGEMENT_TITLES,
    "Other/Mixed": OTHER_TITLES,
}
LEADS = {
    "Earnings & Guidance": GUIDANCE_LEADS,
    "Legal & Regulatory": LEGAL_LEADS,
    "Capital & Transactions": CAPITAL_LEADS,
    "Management & Operations": MANAGEMENT_LEADS,
    "Other/Mixed": OTHER_LEADS,
}

# Neutral detail sentences per type (may hold same-type cues, never tone words).
DETAILS = {
    "Earnings & Guidance": (
        "The company will discuss the results on a conference call with analysts.",
        "Analysts had expected revenue of about {rev} for the period.",
        "The report covers {fqs}.",
    ),
    "Legal & Regulatory": (
        "The case was filed in federal court in Delaware.",
        "The company said it will keep regulators updated.",
        "A hearing is scheduled for later this year.",
    ),
    "Capital & Transactions": (
        "The transaction requires customary approvals.",
        "Advisers on the transaction were not named.",
        "The company will fund the payments from cash on hand.",
    ),
    "Management & Operations": (
        "The company said the change is part of its long-term plan.",
        "The new arrangement starts next quarter.",
        "The company did not give further detail on timing.",
    ),
    "Other/Mixed": (
        "The company did not give further detail.",
        "Shares have traded in a narrow range this month.",
    ),
}
GENERIC = (
    "{co} shares ended the previous session at ${px}.",
    "{co} is a component of the Nasdaq-100 index.",
    "The stock has a market value of about ${cap} billion.",
    "Trading volume was near its 30-day average.",
    "{co} is based in the United States and sells to customers worldwide.",
    "The company is scheduled to present at an industry conference next month.",
)
BOILERPLATE = (
    "The views and opinions expressed herein are the views and opinions of the author and do not "
    "necessarily reflect those of the publisher. This article is synthetic and for testing only."
)

# ------------------------------------------------------------------ other roles
COMPANION_TITLES = {
    1: (
        "Analysts See Upside for {co} After {subject}, Citing Improved Trends",
        "Why {co}'s {subject} Is a Positive Sign",
        "Street View: {co} {subject} Points to Stronger Results",
        "{co}: {subject} Seen as a Success by Analysts",
        "Here's Why {co}'s {subject} Could Benefit Investors",
    ),
    -1: (
        "Analysts Flag Concerns for {co} After {subject}",
        "Why {co}'s {subject} Is a Negative Sign",
        "Street View: {co} {subject} Points to Weaker Results",
        "{co}: {subject} Seen as a Setback by Analysts",
        "Here's Why {co}'s {subject} Could Hurt Investors Amid Challenges",
    ),
    0: (
        "Analysts Review {co}'s {subject}",
        "What {co}'s {subject} Means for the Stock",
        "Street View: {co} {subject} in Focus",
        "{co}: Analysts Discuss the {subject}",
        "Here's What to Know About {co}'s {subject}",
    ),
}
COMPANION_LEADS = {
    1: (
        "Analysts at {firm} said the {subject} was encouraging and should improve results.",
        "In a note, {firm} called the {subject} a positive development with excellent potential.",
    ),
    -1: (
        "Analysts at {firm} said the {subject} was disappointing and raised concerns.",
        "In a note, {firm} called the {subject} a negative development that may weaken results.",
    ),
    0: (
        "Analysts at {firm} reviewed the {subject} in a note to clients.",
        "In a note, {firm} described the {subject} and kept its rating.",
    ),
}
FIRMS = ("Example Securities", "Acme Capital Markets", "Northbridge Research", "Harbor Street Partners", "Summit Equity Research")
FOLLOWUP_TITLES = {
    1: (
        "{co} Investors Digest {subject}, Outlook Seen Improving",
        "{co} After the {subject}: Progress Continues",
        "Is {co} a Buy After Its {subject}? Analysts Are Optimistic",
    ),
    -1: (
        "{co} Investors Digest {subject} Amid Concerns",
        "{co} After the {subject}: Challenges Remain",
        "Is {co} a Sell After Its {subject}? Analysts See Weakness",
    ),
    0: (
        "{co} Investors Digest {subject}",
        "{co} After the {subject}: What Comes Next",
        "Is {co} a Buy After Its {subject}?",
    ),
}
PEER_TITLES = {
    1: (
        "{peer} Seen Benefiting From {co}'s {subject}",
        "{co}'s {subject} a Positive Read-Across for {peer}",
        "{peer} Outperforms as Investors Weigh {co}'s {subject}",
    ),
    -1: (
        "{peer} Faces Concerns After {co}'s {subject}",
        "{co}'s {subject} a Negative Read-Across for {peer}",
        "{peer} Underperforms as Investors Weigh {co}'s {subject}",
    ),
    0: (
        "What {co}'s {subject} Means for {peer}",
        "{peer} in Focus After {co}'s {subject}",
        "Investors Compare {peer} and {co} After the {subject}",
    ),
}
TRAP_TITLES = {
    "after_hours": {
        1: "{co} Shares Up {pct}% in Extended Trading After {subject}, Outperforming the Market",
        -1: "{co} Shares Down {pct}% in Extended Trading After {subject}, a Decline for Investors",
        0: "{co} Shares Little Changed in Extended Trading After {subject}",
    },
    "later": {
        1: "Shares of {co} Rose {pct}% in the {k} After {subject}, Outperforming the Market",
        -1: "Shares of {co} Declined {pct}% in the {k} After {subject}",
        0: "Shares of {co} Were Little Changed in the {k} After {subject}",
    },
}
BACKGROUND_TITLES = {
    0: (
        "3 Things to Watch at {co} This Week",
        "Is {co} Stock a Buy Now?",
        "{co} Stock: A Look at the Chart",
        "How {co} Fits in a Long-Term Portfolio",
        "{tk} Stock Moves on Heavy Trading",
        "What Wall Street Thinks of {co} Right Now",
        "{co} vs. the Nasdaq: A Quick Comparison",
        "Options Traders Eye {co} Ahead of the Weekend",
        "{co} Stock in Focus as Markets Open",
        "A Closer Look at {co}'s Valuation",
    ),
    1: (
        "Why {co} Could Be an Excellent Long-Term Holding",
        "{co} Stock Has Outperformed the Nasdaq This Year",
        "3 Reasons to Be Optimistic About {co}",
    ),
    -1: (
        "Why {co} Stock Has Underperformed the Nasdaq",
        "3 Concerns Investors Have About {co}",
        "Is {co} Losing Momentum? Some Investors Worry About Weakness",
    ),
}
BACKGROUND_LEADS = {
    0: (
        "{co} shares have moved with the broader market this month.",
        "Investors are watching {co} along with other large Nasdaq names.",
    ),
    1: ("{co} has outperformed the index, and some investors are optimistic.",),
    -1: ("{co} has underperformed the index, and some investors see weakness.",),
}

# Light rewording for re-reports (first match of each pair is replaced).
REWORD = (
    ("Announces", "Unveils"),
    ("Reports", "Posts"),
    ("Raises", "Lifts"),
    ("Cuts", "Trims"),
    ("Completes", "Closes Out"),
    ("Names", "Taps"),
    ("Signs", "Inks"),
    ("Faces", "Confronts"),
    ("Quarterly", "Latest"),
    ("After", "Following"),
    ("Amid", "As"),
    ("Says", "States"),
)
REREPORT_PREFIX = ("UPDATE 1-", "UPDATE 2-", "BRIEF-", "")

QUARTER_WORDS = {1: "first", 2: "second", 3: "third", 4: "fourth"}
SESSION_WORDS = {1: "Session", 2: "Two Sessions", 3: "Three Sessions", 4: "Four Sessions", 5: "Five Sessions"}


# Light rewording of re-report summaries (first match replaced).
REWORD_TEXT = ((" said ", " stated "), (" reported ", " posted "), (" expects ", " anticipates "), (" shares ", " stock "))


def reword_text(text: str) -> str:
    """Swap the first matching word pair in a sentence (a near-duplicate, not a copy)."""
    for a, b in REWORD_TEXT:
        if a in text:
            return text.replace(a, b, 1)
    return text


def fill(template: str, **kw: str) -> str:
    """``str.format`` that tolerates unused keywords."""
    return template.format(**kw)


def reword(title: str, k: int) -> str:
    """A light, deterministic rewording (the k-th variant) of a title."""
    out = title
    swaps = [p for p in REWORD if p[0] in out]
    if swaps:
        a, b = swaps[k % len(swaps)]
        out = out.replace(a, b, 1)
    prefix = REREPORT_PREFIX[k % len(REREPORT_PREFIX)]
    if out == title and not prefix:
        prefix = "UPDATE 1-"
    return prefix + out
